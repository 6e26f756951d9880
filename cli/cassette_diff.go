package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"

	"github.com/dageval/dageval/fakes/cassettediff"
)

func init() {
	registerCassette(&command{
		name:    "cassette diff",
		summary: "show what changed between two cassettes in model terms",
		usage:   "[--format text|json] OLD NEW\n       dageval cassette diff --git REV [--format text|json] [PATH...]",
		help: `Compares two cassettes as the model saw them, interaction by interaction:
the request (model and parameters), the system prompt (its blocks and
cache-control markers), the tools (name, description, schema), the
messages sent (text, tool calls, tool results) and the answer (text, tool
calls, stop reason, usage). Requests are read as the provider would read
them and answers as a replayed run reads them, so ids, headers and file
layout never count as changes. Interactions pair by lane (the agent, each
subagent call, the grader) in recorded order; a section that changed the
same way in an earlier interaction — the system prompt and tools repeat in
every request — says "as in [N]" instead of repeating its diff.

OLD and NEW are cassette files, or REV:PATH to read one from git (git show):
  dageval cassette diff main:evals/cassettes/a.yaml evals/cassettes/a.yaml
  dageval cassette diff HEAD~1:a.yaml a.yaml
A REV:PATH that does not exist at REV is a cassette the change adds (or
removes).

With --git REV, compares every cassette (.yaml, .yml) under the PATHs (the
current directory by default) that differs between REV and the working
tree, added and deleted ones included — on a pull request:
  dageval cassette diff --git origin/main evals/

As a git diff driver it shows model terms in git diff, git log -p and git
show; git then calls it with seven arguments (path, old file, old hash,
old mode, new file, new hash, new mode), and it always exits 0 then:
  echo '*/cassettes/*.yaml diff=cassette' >> .gitattributes
  git config diff.cassette.command 'dageval cassette diff'

Exit status: 0 no change in model terms, 1 changes, 2 a cassette or git
revision could not be read, or bad flags.`,
		run: runCassetteDiff,
	})
}

// gitMode matches the mode argument git passes an external diff driver.
var gitMode = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\.|[0-7]{6})$`) })

func runCassetteDiff(ctx context.Context, e *env, args []string) error {
	c := cassetteCommands["diff"]
	fs := newFlags(c, e)
	format := fs.String("format", "text", "output format: text or json")
	rev := fs.String("git", "", "compare every cassette that differs between this git revision and the working tree")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usageError("--format %q: want text or json", *format)
	}
	var pairs [][2]cassettediff.Side
	driver := false
	switch {
	case *rev != "":
		if pairs, err = gitPairs(ctx, *rev, pos); err != nil {
			return &exitError{code: exitBad, msg: err.Error()}
		}
	case len(pos) == 7 && gitMode().MatchString(pos[3]) && gitMode().MatchString(pos[6]):
		// git diff's external driver: path old-file old-hex old-mode new-file new-hex new-mode.
		driver = true
		old, err := readDriverSide(pos[0], pos[1])
		if err != nil {
			return &exitError{code: exitBad, msg: err.Error()}
		}
		new, err := readDriverSide(pos[0], pos[4])
		if err != nil {
			return &exitError{code: exitBad, msg: err.Error()}
		}
		pairs = append(pairs, [2]cassettediff.Side{old, new})
	case len(pos) == 2:
		old, err := readSide(ctx, pos[0])
		if err != nil {
			return &exitError{code: exitBad, msg: err.Error()}
		}
		new, err := readSide(ctx, pos[1])
		if err != nil {
			return &exitError{code: exitBad, msg: err.Error()}
		}
		if old.Data == nil && new.Data == nil {
			return &exitError{code: exitBad, msg: fmt.Sprintf("neither %s nor %s exists", pos[0], pos[1])}
		}
		pairs = append(pairs, [2]cassettediff.Side{old, new})
	default:
		return usageError("want OLD and NEW (files or REV:PATH), or --git REV [PATH...]; got %d arguments", len(pos))
	}
	var reports []*cassettediff.Report
	changed := 0
	for _, p := range pairs {
		r, err := cassettediff.Compare(ctx, p[0], p[1])
		if err != nil {
			return &exitError{code: exitBad, msg: err.Error()}
		}
		reports = append(reports, r)
		if r.Changed() {
			changed++
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if reports == nil {
			reports = []*cassettediff.Report{}
		}
		if err := enc.Encode(reports); err != nil {
			return err
		}
	} else {
		for i, r := range reports {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			if err := r.WriteText(e.stdout); err != nil {
				return err
			}
		}
		if *rev != "" && len(reports) == 0 {
			fmt.Fprintf(e.stdout, "no cassette differs from %s\n", *rev)
		}
	}
	if changed > 0 && !driver {
		return failures("%d of %d cassettes changed in model terms", changed, len(reports))
	}
	return nil
}

// readSide reads a cassette file, or REV:PATH from git (PATH relative to
// the current directory, as NEW is); a PATH that REV lacks is a side
// without the cassette: the change adds it, or removes it.
func readSide(ctx context.Context, arg string) (cassettediff.Side, error) {
	data, err := os.ReadFile(arg)
	if err == nil {
		return cassettediff.Side{Name: arg, Data: data}, nil
	}
	rev, path, isGit := strings.Cut(arg, ":")
	if !errors.Is(err, fs.ErrNotExist) || !isGit || path == "" {
		return cassettediff.Side{}, err
	}
	data, found, err := gitShow(ctx, rev, path)
	if err != nil || !found {
		return cassettediff.Side{Name: arg}, err
	}
	return cassettediff.Side{Name: arg, Data: data}, nil
}

// readDriverSide reads one file git hands its diff driver (/dev/null for
// the side that lacks the file).
func readDriverSide(name, file string) (cassettediff.Side, error) {
	if file == os.DevNull {
		return cassettediff.Side{Name: name}, nil
	}
	data, err := os.ReadFile(file)
	return cassettediff.Side{Name: name, Data: data}, err
}

// gitShow reads path at rev; found is false when rev has no such path.
func gitShow(ctx context.Context, rev, path string) (data []byte, found bool, err error) {
	if !strings.HasPrefix(path, "./") && !strings.HasPrefix(path, "../") {
		// git reads rev:path from the repository's root and rev:./path from
		// the current directory, as the command line's other paths are.
		path = "./" + path
	}
	out, stderr, err := git(ctx, "show", rev+":"+path)
	if err == nil {
		return out, true, nil
	}
	msg := strings.TrimSpace(stderr)
	if strings.Contains(msg, "does not exist") || strings.Contains(msg, "exists on disk, but not in") {
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("git show %s:%s: %s", rev, path, cmp.Or(msg, err.Error()))
}

// gitPairs lists the cassettes under paths that differ between rev and
// the working tree (tracked changes and untracked files), with both sides.
func gitPairs(ctx context.Context, rev string, paths []string) ([][2]cassettediff.Side, error) {
	if _, stderr, err := git(ctx, "rev-parse", "--verify", "--quiet", rev+"^{commit}"); err != nil {
		return nil, fmt.Errorf("--git %s: not a revision of this repository%s", rev, strings.TrimPrefix(" ("+strings.TrimSpace(stderr)+")", " ()"))
	}
	spec := append([]string{"--"}, paths...)
	changed, stderr, err := git(ctx, append([]string{"diff", "--name-only", "--relative", "-z", "--no-renames", rev}, spec...)...)
	if err != nil {
		return nil, fmt.Errorf("git diff %s: %s", rev, cmp.Or(strings.TrimSpace(stderr), err.Error()))
	}
	untracked, stderr, err := git(ctx, append([]string{"ls-files", "--others", "--exclude-standard", "-z"}, spec...)...)
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %s", cmp.Or(strings.TrimSpace(stderr), err.Error()))
	}
	var out [][2]cassettediff.Side
	seen := map[string]bool{}
	for _, f := range strings.Split(string(changed)+string(untracked), "\x00") {
		if f == "" || seen[f] || !(strings.HasSuffix(f, ".yaml") || strings.HasSuffix(f, ".yml")) {
			continue
		}
		seen[f] = true
		old, found, err := gitShow(ctx, rev, f)
		if err != nil {
			return nil, err
		}
		if !found {
			old = nil
		}
		new, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if !isCassette(old) && !isCassette(new) {
			continue // a suite, an agent file, …
		}
		out = append(out, [2]cassettediff.Side{{Name: rev + ":" + f, Data: old}, {Name: f, Data: new}})
	}
	return out, nil
}

// isCassette tells a cassette from the other YAML files of a change.
func isCassette(data []byte) bool {
	return data != nil && bytes.Contains(data, []byte("\ninteractions:")) && bytes.Contains(data, []byte("version:"))
}

// git runs git in the current directory.
func git(ctx context.Context, args ...string) (stdout []byte, stderr string, err error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	var eb bytes.Buffer
	cmd.Stderr = &eb
	out, err := cmd.Output()
	return out, eb.String(), err
}
