package backend

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxBraceExpansions bounds how many patterns one brace expression may
// expand to; larger expansions are refused.
const maxBraceExpansions = 1000

// PatternOptions tune CompilePattern.
type PatternOptions struct {
	// Dot lets wildcards match names that start with "." and lets "**"
	// descend into dot directories. File tools leave it off (Deep Agents'
	// glob contract); permission rules turn it on so that "/secrets/**"
	// covers "/secrets/.env".
	Dot bool
}

// Pattern is a compiled glob with the Deep Agents semantics:
//
//   - "*" and "?" match within one path segment, "[abc]", "[a-z]", "[!x]"
//     and "[^x]" are character classes, "{a,b}" expands to alternatives
//     (nested, at most 1000 alternatives), "\" escapes the next character.
//   - "**" as a whole segment matches any number of segments; at the end
//     of a pattern it needs at least one ("a.py/**" matches nothing when
//     a.py is a file).
//   - A pattern without "/" is matched against the base name at any depth.
//     A pattern with "/" is matched against the whole root-relative path; a
//     leading "/" is dropped and the pattern stays anchored at the root.
//   - Unless PatternOptions.Dot is set, a name starting with "." is matched
//     only by a segment that starts with a literal ".", and "**" does not
//     enter dot directories. Bare patterns still see files inside dot
//     directories, because only the base name is compared.
//   - A pattern ending in "/" names directories and matches no file.
type Pattern struct {
	src      string
	alts     []alt
	basename bool
	dirOnly  bool
	dot      bool
}

type alt struct {
	raw  []string // segment source text, for Derive
	segs []segment
}

type tokKind uint8

const (
	tokLit tokKind = iota
	tokAny
	tokStar
	tokClass
)

type token struct {
	kind  tokKind
	r     rune
	class *charClass
}

type charClass struct {
	neg    bool
	ranges [][2]rune
}

func (c *charClass) match(r rune) bool {
	in := false
	for _, rg := range c.ranges {
		if r >= rg[0] && r <= rg[1] {
			in = true
			break
		}
	}
	return in != c.neg
}

type segment struct {
	globstar bool
	literal  bool   // no wildcard: compare with lit
	lit      string // unescaped text when literal
	toks     []token
}

// CompilePattern compiles a glob. It fails with an InvalidArgument error on
// an empty pattern or one whose brace expansion is too large.
func CompilePattern(pattern string, opts PatternOptions) (*Pattern, error) {
	if pattern == "" {
		return nil, errf(InvalidArgument, "", "Invalid glob pattern: the pattern is empty")
	}
	p := &Pattern{src: pattern, dot: opts.Dot, basename: !strings.Contains(pattern, "/")}
	body := strings.TrimLeft(pattern, "/")
	if strings.HasSuffix(body, "/") && !strings.HasSuffix(body, `\/`) {
		p.dirOnly = true
	}
	expanded, err := expandBraces(body)
	if err != nil {
		return nil, errf(InvalidArgument, "", "Invalid glob pattern %q: %v", pattern, err)
	}
	seen := map[string]bool{}
	for _, e := range expanded {
		if seen[e] {
			continue
		}
		seen[e] = true
		var a alt
		for _, raw := range strings.Split(e, "/") {
			if raw == "" {
				continue
			}
			a.raw = append(a.raw, raw)
			a.segs = append(a.segs, parseSegment(raw))
		}
		p.alts = append(p.alts, a)
	}
	return p, nil
}

// String returns the pattern's source.
func (p *Pattern) String() string { return p.src }

// Match reports whether a root-relative file path ("sub/b.py"; a leading
// "/" is ignored) matches.
func (p *Pattern) Match(rel string) bool {
	if p.dirOnly {
		return false
	}
	rel = strings.TrimLeft(rel, "/")
	if p.basename {
		name := rel
		if i := strings.LastIndexByte(rel, '/'); i >= 0 {
			name = rel[i+1:]
		}
		if name == "" {
			return false
		}
		for _, a := range p.alts {
			if len(a.segs) == 1 && a.segs[0].matchName(name, p.dot) {
				return true
			}
		}
		return false
	}
	var names []string
	if rel != "" {
		names = strings.Split(rel, "/")
	}
	for _, a := range p.alts {
		if matchSegs(a.segs, names, p.dot) {
			return true
		}
	}
	return false
}

// derive returns the patterns that files below the directory prefix
// (root-relative, e.g. "memories" or "a/b") must match, relative to that
// directory, so that a search can be handed to whatever serves the
// directory. Bare (base-name) patterns are returned unchanged. An empty
// result means no file below prefix can match.
func (p *Pattern) derive(prefix string) []string {
	if p.dirOnly {
		return nil
	}
	if p.basename {
		return []string{p.src}
	}
	prefix = strings.Trim(prefix, "/")
	var names []string
	if prefix != "" {
		names = strings.Split(prefix, "/")
	}
	var out []string
	seen := map[string]bool{}
	for _, a := range p.alts {
		for _, rest := range derive(a.segs, a.raw, names, p.dot) {
			if len(rest) == 0 {
				continue
			}
			s := "/" + strings.Join(rest, "/")
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func derive(segs []segment, raw, names []string, dot bool) [][]string {
	if len(names) == 0 {
		return [][]string{raw}
	}
	if len(segs) == 0 {
		return nil
	}
	s := segs[0]
	if s.globstar {
		out := derive(segs[1:], raw[1:], names, dot)
		if dot || !strings.HasPrefix(names[0], ".") {
			out = append(out, derive(segs, raw, names[1:], dot)...)
		}
		return out
	}
	if !s.matchName(names[0], dot) {
		return nil
	}
	return derive(segs[1:], raw[1:], names[1:], dot)
}

func matchSegs(segs []segment, names []string, dot bool) bool {
	for len(segs) > 0 {
		s := segs[0]
		if s.globstar {
			rest := segs[1:]
			if len(rest) == 0 {
				if len(names) == 0 {
					return false
				}
				if !dot {
					for _, n := range names {
						if strings.HasPrefix(n, ".") {
							return false
						}
					}
				}
				return true
			}
			for i := 0; i <= len(names); i++ {
				if matchSegs(rest, names[i:], dot) {
					return true
				}
				if i < len(names) && !dot && strings.HasPrefix(names[i], ".") {
					return false
				}
			}
			return false
		}
		if len(names) == 0 || !s.matchName(names[0], dot) {
			return false
		}
		segs, names = segs[1:], names[1:]
	}
	return len(names) == 0
}

func parseSegment(raw string) segment {
	if raw == "**" {
		return segment{globstar: true}
	}
	var toks []token
	literal := true
	rs := []rune(raw)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch r {
		case '\\':
			if i+1 < len(rs) {
				i++
				toks = append(toks, token{kind: tokLit, r: rs[i]})
			} else {
				toks = append(toks, token{kind: tokLit, r: r})
			}
		case '*':
			literal = false
			if len(toks) == 0 || toks[len(toks)-1].kind != tokStar {
				toks = append(toks, token{kind: tokStar})
			}
		case '?':
			literal = false
			toks = append(toks, token{kind: tokAny})
		case '[':
			if cls, n := parseClass(rs[i+1:]); cls != nil {
				literal = false
				toks = append(toks, token{kind: tokClass, class: cls})
				i += n
			} else {
				toks = append(toks, token{kind: tokLit, r: r})
			}
		default:
			toks = append(toks, token{kind: tokLit, r: r})
		}
	}
	if literal {
		var sb strings.Builder
		for _, t := range toks {
			sb.WriteRune(t.r)
		}
		return segment{literal: true, lit: sb.String(), toks: toks}
	}
	return segment{toks: toks}
}

// parseClass parses the body of a bracket expression (after "["). It returns
// nil when there is no closing "]" and "[" is then a literal. n counts the
// runes consumed including the closing "]".
func parseClass(rs []rune) (*charClass, int) {
	c := &charClass{}
	i := 0
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		c.neg = true
		i++
	}
	first := true
	for i < len(rs) {
		r := rs[i]
		if r == ']' && !first {
			return c, i + 1
		}
		first = false
		if r == '\\' && i+1 < len(rs) {
			i++
			r = rs[i]
		}
		lo, hi := r, r
		if i+2 < len(rs) && rs[i+1] == '-' && rs[i+2] != ']' {
			hi = rs[i+2]
			if hi == '\\' && i+3 < len(rs) {
				hi = rs[i+3]
				i++
			}
			i += 2
		}
		c.ranges = append(c.ranges, [2]rune{lo, hi})
		i++
	}
	return nil, 0
}

func (s segment) matchName(name string, dot bool) bool {
	if s.globstar {
		// A lone "**" in a base-name pattern behaves like "*".
		return name != "" && (dot || name[0] != '.')
	}
	if s.literal {
		return s.lit == name
	}
	if !dot && strings.HasPrefix(name, ".") && (len(s.toks) == 0 || s.toks[0].kind != tokLit || s.toks[0].r != '.') {
		return false
	}
	return matchTokens(s.toks, name)
}

// matchTokens is a linear-time wildcard matcher that backtracks only to the
// most recent star.
func matchTokens(toks []token, name string) bool {
	ti, ni := 0, 0
	starT, starN := -1, 0
	for ni < len(name) {
		r, size := utf8.DecodeRuneInString(name[ni:])
		if ti < len(toks) {
			t := toks[ti]
			switch t.kind {
			case tokStar:
				starT, starN = ti, ni
				ti++
				continue
			case tokAny:
				ti++
				ni += size
				continue
			case tokLit:
				if t.r == r {
					ti++
					ni += size
					continue
				}
			case tokClass:
				if t.class.match(r) {
					ti++
					ni += size
					continue
				}
			}
		}
		if starT < 0 {
			return false
		}
		_, sz := utf8.DecodeRuneInString(name[starN:])
		starN += sz
		ni = starN
		ti = starT + 1
	}
	for ti < len(toks) && toks[ti].kind == tokStar {
		ti++
	}
	return ti == len(toks)
}

// expandBraces expands unescaped {a,b} groups, left to right and nested.
// A group without a top-level comma, or without a closing brace, is literal.
func expandBraces(s string) ([]string, error) {
	out, err := expand(s, 0)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func expand(s string, depth int) ([]string, error) {
	if depth > 32 {
		return nil, fmt.Errorf("braces nested too deeply")
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			end, commas := matchBrace(s, i)
			if end < 0 || len(commas) == 0 {
				continue
			}
			pre, post := s[:i], s[end+1:]
			var parts []string
			start := i + 1
			for _, c := range commas {
				parts = append(parts, s[start:c])
				start = c + 1
			}
			parts = append(parts, s[start:end])
			var out []string
			for _, part := range parts {
				sub, err := expand(pre+part+post, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
				if len(out) > maxBraceExpansions {
					return nil, fmt.Errorf("brace expansion yields more than %d patterns", maxBraceExpansions)
				}
			}
			return slices.Compact(out), nil
		}
	}
	return []string{s}, nil
}

// matchBrace finds the brace closing the group opened at s[open] and the
// positions of its top-level commas; end is -1 when it is never closed.
func matchBrace(s string, open int) (end int, commas []int) {
	depth := 0
	for j := open; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j, commas
			}
		case ',':
			if depth == 1 {
				commas = append(commas, j)
			}
		}
	}
	return -1, nil
}
