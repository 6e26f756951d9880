package evals

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Cell is one run of the matrix: a case with a model, a profile and an epoch.
type Cell struct {
	CellKey
	// ID names the cell's detail file and cassette.
	ID string
	// CaseDef is the case named by CellKey.Case.
	CaseDef *Case
	// ProfileDef is the profile named by CellKey.Profile.
	ProfileDef *Profile
	// Cassette is the cell's cassette file.
	Cassette string
	// Alias is the role the suite gives the cell's model ("" for none).
	Alias string
	// Stream says whether the cell's agent streams its model calls (see Suite.Streams).
	Stream bool
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// CellID is the file name (without extension) of a cell's detail file and
// cassette: "<case>--<model>--<profile>--e<epoch>", where characters other
// than letters, digits, '_' and '-' become '-'.
func CellID(k CellKey) string {
	part := func(s string) string { return unsafeID.ReplaceAllString(s, "-") }
	return part(k.Case) + "--" + part(k.Model) + "--" + part(k.Profile) + "--e" + strconv.Itoa(k.Epoch)
}

// Cells expands the suite into its matrix, cases × models × profiles ×
// epochs in suite order, keeping the cells the filter selects. epochs > 0
// overrides every case's epochs.
func (s *Suite) Cells(filter string, epochs int) ([]Cell, error) {
	f, err := parseFilter(filter)
	if err != nil {
		return nil, err
	}
	var out []Cell
	ids := map[string]CellKey{}
	for _, c := range s.Cases {
		n := c.Epochs
		if epochs > 0 {
			n = epochs
		}
		for _, m := range c.models(s) {
			for _, p := range s.Profiles {
				for e := 1; e <= n; e++ {
					k := CellKey{Case: c.ID, Model: m, Profile: p.Name, Epoch: e}
					if !f.match(k, s.Aliases[m], c.Tags) {
						continue
					}
					id := CellID(k)
					if other, dup := ids[id]; dup {
						return nil, s.caseErr(c, "id", "cells %s/%s/%s/e%d and %s/%s/%s/e%d would share the file name %s; rename a case, model or profile",
							other.Case, other.Model, other.Profile, other.Epoch, k.Case, k.Model, k.Profile, k.Epoch, id)
					}
					ids[id] = k
					cas := c.Cassette
					if cas == "" {
						cas = filepath.Join(s.Cassettes, id+".yaml")
					}
					out = append(out, Cell{CellKey: k, ID: id, CaseDef: c, ProfileDef: p, Cassette: cas, Alias: s.Aliases[m], Stream: s.Streams(m, p)})
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the filter %q selects no cells", filter)
	}
	return out, nil
}

// filter selects cells. It is a list of terms separated by commas or
// spaces: field=glob or field!=glob with field one of case, model,
// profile, epoch, tag; a bare glob is a case. Terms on the same field are
// alternatives; terms on different fields must all hold; != terms exclude.
type filter struct {
	include map[string][]string
	exclude map[string][]string
}

var filterFields = []string{"case", "model", "profile", "epoch", "tag"}

func parseFilter(expr string) (*filter, error) {
	f := &filter{include: map[string][]string{}, exclude: map[string][]string{}}
	for _, term := range strings.FieldsFunc(expr, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		field, glob, neg := "case", term, false
		if i := strings.Index(term, "!="); i >= 0 {
			field, glob, neg = term[:i], term[i+2:], true
		} else if i := strings.IndexByte(term, '='); i >= 0 {
			field, glob = term[:i], term[i+1:]
		}
		if !slices.Contains(filterFields, field) {
			return nil, fmt.Errorf("filter term %q: unknown field %q (want %s)", term, field, strings.Join(filterFields, ", "))
		}
		if glob == "" {
			return nil, fmt.Errorf("filter term %q has no pattern", term)
		}
		if _, err := compileGlob(glob); err != nil {
			return nil, fmt.Errorf("filter term %q: %v", term, err)
		}
		if neg {
			f.exclude[field] = append(f.exclude[field], glob)
		} else {
			f.include[field] = append(f.include[field], glob)
		}
	}
	return f, nil
}

func (f *filter) match(k CellKey, alias string, tags []string) bool {
	values := func(field string) []string {
		switch field {
		case "case":
			return []string{k.Case}
		case "model":
			if alias != "" {
				return []string{k.Model, alias}
			}
			return []string{k.Model}
		case "profile":
			return []string{k.Profile}
		case "epoch":
			return []string{strconv.Itoa(k.Epoch)}
		}
		return tags
	}
	anyMatch := func(globs, vals []string) bool {
		for _, g := range globs {
			re, _ := compileGlob(g)
			for _, v := range vals {
				if re.MatchString(v) {
					return true
				}
			}
		}
		return false
	}
	for field, globs := range f.include {
		if !anyMatch(globs, values(field)) {
			return false
		}
	}
	for field, globs := range f.exclude {
		if anyMatch(globs, values(field)) {
			return false
		}
	}
	return true
}

// compileGlob turns a filter pattern into a regular expression: * matches
// any run of characters ('/' and ':' included, which model specs hold), ?
// one character, [set] a character class; anything else is literal.
func compileGlob(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(glob[i:], ']')
			if j < 0 {
				return nil, errors.New("unclosed [ in pattern")
			}
			b.WriteString(glob[i : i+j+1])
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
