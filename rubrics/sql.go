package rubrics

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ValidSQL is a syntax check of SQL text, not a parser: it is what is_sql
// holds a text to. The text must be one or more statements separated by
// semicolons, each starting with a statement keyword (SELECT, WITH,
// INSERT, UPDATE, DELETE, MERGE, CREATE, ALTER, DROP, TRUNCATE, REPLACE,
// GRANT, REVOKE, EXPLAIN, SHOW, DESCRIBE, USE, BEGIN, COMMIT, ROLLBACK,
// SET, VALUES), with every string, quoted identifier and comment closed,
// parentheses balanced, and a SELECT that selects something and an INSERT,
// UPDATE or DELETE that names its table.
//
// The only full parser the module proxy serves, Vitess's, requires a newer
// go directive than this module's and upgrades a dozen of its dependencies,
// and would link gRPC into every binary that checks answers; the other one
// served is a 2018 snapshot of it that nobody maintains. A syntax check
// catches what an agent's SQL most often gets wrong (prose around the
// query, a cut-off statement, an unclosed quote) without either.
func ValidSQL(text string) error {
	toks, err := sqlTokens(text)
	if err != nil {
		return err
	}
	var stmt []sqlToken
	n := 0
	flush := func() error {
		if len(stmt) == 0 {
			return nil
		}
		n++
		if err := sqlStatement(stmt); err != nil {
			return fmt.Errorf("statement %d: %w", n, err)
		}
		stmt = stmt[:0]
		return nil
	}
	depth := 0
	for _, t := range toks {
		switch {
		case t.kind == sqlPunct && t.text == "(":
			depth++
		case t.kind == sqlPunct && t.text == ")":
			depth--
			if depth < 0 {
				return fmt.Errorf("an unmatched ) at offset %d", t.pos)
			}
		case t.kind == sqlPunct && t.text == ";" && depth == 0:
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		stmt = append(stmt, t)
	}
	if depth > 0 {
		return errors.New("a ( is never closed")
	}
	if err := flush(); err != nil {
		return err
	}
	if n == 0 {
		return errors.New("there is no statement")
	}
	return nil
}

var sqlStarts = map[string]bool{
	"SELECT": true, "WITH": true, "INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true,
	"CREATE": true, "ALTER": true, "DROP": true, "TRUNCATE": true, "REPLACE": true, "GRANT": true,
	"REVOKE": true, "EXPLAIN": true, "SHOW": true, "DESCRIBE": true, "DESC": true, "USE": true,
	"BEGIN": true, "COMMIT": true, "ROLLBACK": true, "SET": true, "VALUES": true,
}

func sqlStatement(toks []sqlToken) error {
	first := toks[0]
	kw := strings.ToUpper(first.text)
	if first.kind != sqlWord || !sqlStarts[kw] {
		return fmt.Errorf("starts with %q, not a statement keyword", first.text)
	}
	rest := toks[1:]
	next := func(words ...string) bool {
		return len(rest) > 0 && rest[0].kind == sqlWord && containsFold(words, rest[0].text)
	}
	switch kw {
	case "SELECT":
		if len(rest) == 0 || rest[0].kind == sqlWord && containsFold([]string{"FROM", "WHERE"}, rest[0].text) {
			return errors.New("SELECT selects nothing")
		}
	case "INSERT", "REPLACE":
		if !next("INTO") && (len(rest) == 0 || rest[0].kind != sqlWord && rest[0].kind != sqlQuotedName) {
			return fmt.Errorf("%s names no table", kw)
		}
	case "DELETE":
		if !next("FROM") {
			return errors.New("DELETE has no FROM")
		}
	case "UPDATE":
		hasSet := false
		for _, t := range rest {
			hasSet = hasSet || t.kind == sqlWord && strings.EqualFold(t.text, "SET")
		}
		if len(rest) == 0 || !hasSet {
			return errors.New("UPDATE has no SET")
		}
	case "CREATE", "ALTER", "DROP":
		if len(rest) == 0 {
			return fmt.Errorf("%s names nothing to %s", kw, strings.ToLower(kw))
		}
	}
	return nil
}

func containsFold(words []string, w string) bool {
	for _, x := range words {
		if strings.EqualFold(x, w) {
			return true
		}
	}
	return false
}

type sqlKind int

const (
	sqlWord sqlKind = iota
	sqlNumber
	sqlString
	sqlQuotedName
	sqlPunct
)

type sqlToken struct {
	kind sqlKind
	text string
	pos  int
}

// sqlTokens splits SQL text into tokens, dropping comments, and fails on
// a string, quoted identifier or comment that is never closed.
func sqlTokens(s string) ([]sqlToken, error) {
	var out []sqlToken
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '-' && i+1 < len(rs) && rs[i+1] == '-', r == '#':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case r == '/' && i+1 < len(rs) && rs[i+1] == '*':
			end := strings.Index(string(rs[i+2:]), "*/")
			if end < 0 {
				return nil, fmt.Errorf("a /* comment at offset %d is never closed", i)
			}
			i += 2 + len([]rune(string(rs[i+2:])[:end])) + 2
		case r == '\'' || r == '"' || r == '`':
			j := i + 1
			for ; j < len(rs); j++ {
				if rs[j] == '\\' && r != '`' {
					j++
					continue
				}
				if rs[j] == r {
					if j+1 < len(rs) && rs[j+1] == r { // a doubled quote stands for itself
						j++
						continue
					}
					break
				}
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("a %c-quoted text at offset %d is never closed", r, i)
			}
			kind := sqlString
			if r != '\'' {
				kind = sqlQuotedName
			}
			out = append(out, sqlToken{kind, string(rs[i : j+1]), i})
			i = j + 1
		case unicode.IsLetter(r) || r == '_' || r == '@':
			j := i + 1
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '_' || rs[j] == '$') {
				j++
			}
			out = append(out, sqlToken{sqlWord, string(rs[i:j]), i})
			i = j
		case unicode.IsDigit(r):
			j := i + 1
			for j < len(rs) && (unicode.IsDigit(rs[j]) || rs[j] == '.' || rs[j] == 'e' || rs[j] == 'E') {
				j++
			}
			out = append(out, sqlToken{sqlNumber, string(rs[i:j]), i})
			i = j
		case strings.ContainsRune("(),;.*=<>!+-/%|&^~:?[]$", r):
			out = append(out, sqlToken{sqlPunct, string(r), i})
			i++
		default:
			return nil, fmt.Errorf("unexpected %q at offset %d", r, i)
		}
	}
	return out, nil
}
