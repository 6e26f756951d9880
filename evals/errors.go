package evals

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/internal/yamlx"
)

// maxShownErrors bounds the problems an error message lists: past it a
// suite is broken in some systematic way, and the first ones say how.
const maxShownErrors = 20

// errorList is every problem found in a suite and the files it names,
// sorted by file and position. errors.As finds each of them.
type errorList []error

func (l errorList) Error() string {
	var b strings.Builder
	for i, err := range l {
		if i == maxShownErrors {
			fmt.Fprintf(&b, "\n… and %d more problems", len(l)-maxShownErrors)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (l errorList) Unwrap() []error { return l }

// joinErrors sorts problems by file, line and column (problems without a
// position last, in the order found), drops repeats and returns them as
// one error; one problem is returned as itself.
func joinErrors(errs []error) error {
	var flat []error
	for _, err := range errs {
		if err == nil {
			continue
		}
		var l errorList
		if errors.As(err, &l) && error(l) == err {
			flat = append(flat, l...)
			continue
		}
		flat = append(flat, err)
	}
	seen := map[string]bool{}
	var out []error
	for _, err := range flat {
		if msg := err.Error(); !seen[msg] {
			seen[msg] = true
			out = append(out, err)
		}
	}
	slices.SortStableFunc(out, func(a, b error) int {
		pa, oka := position(a)
		pb, okb := position(b)
		switch {
		case oka && okb:
			return cmp.Or(cmp.Compare(pa.File, pb.File), cmp.Compare(pa.Line, pb.Line), cmp.Compare(pa.Column, pb.Column))
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return errorList(out)
}

// position is where a problem is: the YAML files' errors and the profile
// files' both say.
func position(err error) (*yamlx.Error, bool) {
	var ye *yamlx.Error
	if errors.As(err, &ye) && ye.File != "" {
		return ye, true
	}
	var pe *profile.ConfigError
	if errors.As(err, &pe) && pe.File != "" {
		return &yamlx.Error{File: pe.File, Line: pe.Line, Column: pe.Column}, true
	}
	return nil, false
}
