package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/backend/backendtest"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

func readTool(b *testing.B, mw *middleware.Filesystem) tool.Tool {
	for _, t := range mw.Tools() {
		if t.Spec().Name == "read_file" {
			return t
		}
	}
	b.Fatal("no read_file")
	return nil
}

func benchReadFile(b *testing.B, ctx context.Context, t tool.Tool) {
	args := json.RawMessage(`{"file_path":"/big.txt","offset":50000,"limit":100}`)
	b.ReportAllocs()
	for b.Loop() {
		res, err := t.Call(ctx, args)
		if err != nil || res.IsError || !strings.Contains(res.Text(), "50100  line 050099") {
			b.Fatalf("read_file: %v %q", err, res.Text()[:80])
		}
	}
}

// BenchmarkReadFileTool100kLines is the read_file tool returning one
// 100-line page from the middle of a 100 000-line file.
func BenchmarkReadFileTool100kLines(b *testing.B) {
	var sb strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&sb, "line %06d: the quick brown fox jumps over the lazy dog\n", i)
	}
	content := sb.String()
	b.Run("State", func(b *testing.B) {
		t := readTool(b, newBenchMW(b, middleware.FilesystemOptions{}))
		files := map[string]agent.FileData{"/big.txt": {Content: content, Encoding: "utf-8"}}
		_, err := backendtest.InToolCall(b.Context(), files, func(ctx context.Context) error {
			b.ResetTimer()
			benchReadFile(b, ctx, t)
			b.StopTimer()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	b.Run("Filesystem", func(b *testing.B) {
		root := b.TempDir()
		if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		fsb, err := backend.NewFilesystem(root, backend.FilesystemOptions{})
		if err != nil {
			b.Fatal(err)
		}
		benchReadFile(b, b.Context(), readTool(b, newBenchMW(b, middleware.FilesystemOptions{Backend: fsb})))
	})
}

func newBenchMW(b *testing.B, opts middleware.FilesystemOptions) *middleware.Filesystem {
	mw, err := middleware.NewFilesystem(opts)
	if err != nil {
		b.Fatal(err)
	}
	return mw
}
