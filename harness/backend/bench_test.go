package backend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/backend/backendtest"
)

// benchTree is 10 000 small files in 100 directories: one in ten is a
// .go file containing the needle once.
func benchTree() map[string]string {
	out := make(map[string]string, 10_000)
	for d := range 100 {
		for f := range 100 {
			ext, body := ".txt", "plain line\n"
			if f%10 == 0 {
				ext, body = ".go", "package x\n// needle here\n"
			}
			out[fmt.Sprintf("/src/dir%03d/file%03d%s", d, f, ext)] = strings.Repeat("filler text for the benchmark\n", 20) + body
		}
	}
	return out
}

func stateFiles(tree map[string]string) map[string]agent.FileData {
	out := make(map[string]agent.FileData, len(tree))
	for p, c := range tree {
		out[p] = agent.FileData{Content: c, Encoding: "utf-8", ModifiedAt: "2026-01-01T00:00:00.000000Z"}
	}
	return out
}

func diskTree(b *testing.B, tree map[string]string) *backend.Filesystem {
	b.Helper()
	root := b.TempDir()
	for p, c := range tree {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	fsb, err := backend.NewFilesystem(root, backend.FilesystemOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return fsb
}

// inState runs the benchmark loop inside a tool call of a real agent whose
// state holds files.
func inState(b *testing.B, files map[string]agent.FileData, loop func(ctx context.Context)) {
	b.Helper()
	_, err := backendtest.InToolCall(b.Context(), files, func(ctx context.Context) error {
		b.ResetTimer()
		loop(ctx)
		b.StopTimer()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func benchGlob(b *testing.B, ctx context.Context, be backend.Backend) {
	b.ReportAllocs()
	for b.Loop() {
		res, err := be.Glob(ctx, "*.go", "/")
		if err != nil || len(res.Matches) != 1000 {
			b.Fatalf("glob: %d matches, %v", len(res.Matches), err)
		}
	}
}

func benchGrep(b *testing.B, ctx context.Context, be backend.Backend) {
	b.ReportAllocs()
	for b.Loop() {
		res, err := be.Grep(ctx, backend.GrepRequest{Pattern: "needle", MaxCount: 1000})
		if err != nil || len(res.Matches) != 1000 {
			b.Fatalf("grep: %d matches, %v", len(res.Matches), err)
		}
	}
}

func BenchmarkGlob10kFiles(b *testing.B) {
	tree := benchTree()
	b.Run("State", func(b *testing.B) {
		inState(b, stateFiles(tree), func(ctx context.Context) { benchGlob(b, ctx, backend.NewState()) })
	})
	b.Run("Filesystem", func(b *testing.B) { benchGlob(b, b.Context(), diskTree(b, tree)) })
}

func BenchmarkGrep10kFiles(b *testing.B) {
	tree := benchTree()
	b.Run("State", func(b *testing.B) {
		inState(b, stateFiles(tree), func(ctx context.Context) { benchGrep(b, ctx, backend.NewState()) })
	})
	b.Run("Filesystem", func(b *testing.B) { benchGrep(b, b.Context(), diskTree(b, tree)) })
}

func hundredKLines() string {
	var sb strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&sb, "line %06d: the quick brown fox jumps over the lazy dog\n", i)
	}
	return sb.String()
}

func benchRead(b *testing.B, ctx context.Context, be backend.Backend) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := be.Read(ctx, "/big.txt", 50_000, 100)
		if err != nil || r.EndLine != 50_100 || r.TotalLines != 100_000 {
			b.Fatalf("read: %+v, %v", r.EndLine, err)
		}
	}
}

// BenchmarkReadPage100kLines reads one 100-line page from the middle of a
// 100 000-line file.
func BenchmarkReadPage100kLines(b *testing.B) {
	content := hundredKLines()
	b.Run("State", func(b *testing.B) {
		inState(b, stateFiles(map[string]string{"/big.txt": content}), func(ctx context.Context) { benchRead(b, ctx, backend.NewState()) })
	})
	b.Run("Filesystem", func(b *testing.B) { benchRead(b, b.Context(), diskTree(b, map[string]string{"/big.txt": content})) })
}
