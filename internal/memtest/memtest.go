// Package memtest runs a test in a child process whose address space is limited, so that a test can show an input cannot exhaust memory.
package memtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const envChild = "DAGEVAL_MEMTEST_CHILD"

// Bound runs the calling test again in a child process, the test binary
// re-executed for this test alone, whose address space may grow by at most
// budget bytes beyond what it has mapped when the test starts (the race
// detector and the Go runtime reserve much at start-up, so an absolute
// limit would measure them, not the test). It returns true in the child,
// which then runs the test's body; in the parent it returns false once the
// child has finished, failing the test when the child failed (an
// allocation beyond the limit kills it with "out of memory").
//
// debug.SetMemoryLimit is no bound: it only makes the collector work
// harder, and a program still gets all the memory it asks for.
func Bound(t *testing.T, budget int64) bool {
	t.Helper()
	if os.Getenv(envChild) == t.Name() {
		size, err := mappedBytes()
		if err != nil {
			t.Fatalf("memtest: %v", err)
		}
		lim := &syscall.Rlimit{Cur: uint64(size + budget), Max: uint64(size + budget)}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, lim); err != nil {
			t.Fatalf("memtest: setting RLIMIT_AS: %v", err)
		}
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+t.Name())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		t.Fatalf("memtest: the child with %d MiB of address space failed: %v\n%s", budget>>20, err, tail(out.String()))
	}
	if !strings.Contains(out.String(), "--- PASS: "+t.Name()) {
		t.Fatalf("memtest: the child did not run %s:\n%s", t.Name(), tail(out.String()))
	}
	return false
}

// mappedBytes is the process's virtual memory size (VmSize in
// /proc/self/status), what RLIMIT_AS limits.
func mappedBytes() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading VmSize %q: %v", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}

// tail keeps the end of a long output, where a test's failure is, and the
// runtime's fatal error, which comes before its long goroutine dump.
func tail(s string) string {
	const n = 4000
	if len(s) <= n {
		return s
	}
	fatal := ""
	if i := strings.Index(s, "fatal error: "); i >= 0 {
		start := strings.LastIndexByte(s[:i], '\n') + 1
		end := i + strings.IndexByte(s[i:]+"\n", '\n')
		fatal = s[start:end] + "\n"
	}
	return fatal + "…" + s[len(s)-n:]
}
