package memtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBoundStopsAGreedyChild shows the bound is real: a child that
// allocates far beyond its budget dies, and Bound fails the parent test.
func TestBoundStopsAGreedyChild(t *testing.T) {
	if os.Getenv("MEMTEST_GREEDY") == "1" {
		if !Bound(t, 64<<20) {
			return
		}
		var keep [][]byte
		for range 64 { // 1 GiB in all
			keep = append(keep, make([]byte, 16<<20))
			keep[len(keep)-1][0] = 1
		}
		t.Logf("allocated %d chunks", len(keep))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoundStopsAGreedyChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "MEMTEST_GREEDY=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a child allocating 1 GiB within 64 MiB passed:\n%s", out)
	}
	// The race runtime maps its shadow memory as the heap grows and, short
	// of address space, says so in its own words.
	if !strings.Contains(string(out), "out of memory") && !strings.Contains(string(out), "too many address space collisions") {
		t.Fatalf("the child failed, but not for memory:\n%s", out)
	}
}

func TestBoundRunsTheBody(t *testing.T) {
	if !Bound(t, 64<<20) {
		return
	}
	b := make([]byte, 8<<20)
	b[0] = 1
}
