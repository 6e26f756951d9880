package evals

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Shard is one part of a run's matrix: the Index-th (from 1) of Count, so
// that Count processes — the jobs of a CI matrix, the pods of a Kubernetes
// Indexed Job — run a suite together and `dageval merge` joins their
// output directories into the one a single machine would have written.
// The zero Shard is the whole matrix.
type Shard struct {
	Index int
	Count int
}

// ParseShard reads "I/N" (1 ≤ I ≤ N), as --shard takes it.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want I/N, e.g. 2/4 for the second of four shards", s)
	}
	sh := Shard{Index: index, Count: count}
	return sh, sh.validate()
}

func (sh Shard) validate() error {
	switch {
	case sh == Shard{}:
		return nil
	case sh.Count < 1:
		return fmt.Errorf("shard %d/%d: the number of shards must be at least 1", sh.Index, sh.Count)
	case sh.Index < 1 || sh.Index > sh.Count:
		return fmt.Errorf("shard %d/%d: the shard index counts from 1 to %d", sh.Index, sh.Count, sh.Count)
	}
	return nil
}

// Whole reports whether sh is the whole matrix (no shard, or 1/1).
func (sh Shard) Whole() bool { return sh.Count <= 1 }

// String is "I/N".
func (sh Shard) String() string { return fmt.Sprintf("%d/%d", sh.Index, sh.Count) }

// MarshalText writes "I/N", so summary.json and run.json read as --shard does.
func (sh Shard) MarshalText() ([]byte, error) { return []byte(sh.String()), nil }

// UnmarshalText reads "I/N".
func (sh *Shard) UnmarshalText(b []byte) error {
	v, err := ParseShard(string(b))
	if err != nil {
		return err
	}
	*sh = v
	return nil
}

// Shard returns shard sh's part of cells (a matrix from Cells), in matrix
// order. The parts are deterministic — the same on every machine, for the
// same suite and cells — disjoint, and together all the cells. They are
// balanced by expected cost, not by position: each cell weighs one unit
// plus a tenth of its model's price (input and output, USD per million
// tokens, from the catalog or the suite's declarations), and as much again
// for the grader when its case has a rubric; the heaviest cells are dealt
// first, each to the least loaded shard (ties to the lower index), so that
// every shard gets its share of every model and epoch and the loads differ
// by at most one cell.
func (s *Suite) Shard(cells []Cell, sh Shard) []Cell {
	if sh.Whole() {
		return cells
	}
	owner := s.shardOwners(cells, sh.Count)
	var out []Cell
	for i, c := range cells {
		if owner[i] == sh.Index-1 {
			out = append(out, c)
		}
	}
	return out
}

// shardOwners assigns each cell to a shard (from 0) by the longest-
// processing-time rule. Weights are integers, so no floating-point
// rounding can make two machines disagree.
func (s *Suite) shardOwners(cells []Cell, n int) []int {
	weights := make(map[string]int64)
	weigh := func(spec string) int64 {
		w, ok := weights[spec]
		if !ok {
			w = 1000
			if m, err := s.modelCatalog().Lookup(spec); err == nil && m.Price != nil {
				w += int64(math.Round((m.Price.Input + m.Price.Output) * 100))
			}
			weights[spec] = w
		}
		return w
	}
	w := make([]int64, len(cells))
	order := make([]int, len(cells))
	for i, c := range cells {
		w[i] = weigh(c.Model)
		if c.CaseDef.Rubric != nil && s.Grader != nil {
			w[i] += weigh(s.Grader.Model)
		}
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case w[a] > w[b]:
			return -1
		case w[a] < w[b]:
			return 1
		}
		return 0
	})
	load := make([]int64, n)
	owner := make([]int, len(cells))
	for _, i := range order {
		least := 0
		for k := 1; k < n; k++ {
			if load[k] < load[least] {
				least = k
			}
		}
		owner[i] = least
		load[least] += w[i]
	}
	return owner
}
