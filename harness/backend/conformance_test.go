package backend_test

import (
	"testing"

	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/backend/backendtest"
)

func newFS(t *testing.T) backend.Backend {
	t.Helper()
	fs, err := backend.NewFilesystem(t.TempDir(), backend.FilesystemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func newShell(t *testing.T) *backend.LocalShell {
	t.Helper()
	sh, err := backend.NewLocalShell(t.TempDir(), backend.LocalShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

func mustComposite(t *testing.T, def backend.Backend, routes ...backend.Route) *backend.Composite {
	t.Helper()
	c, err := backend.NewComposite(def, routes, backend.CompositeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("State", func(t *testing.T) { backendtest.Run(t, backendtest.StateHarness()) })
	t.Run("StoreMemory", func(t *testing.T) {
		backendtest.Run(t, backendtest.Harness{New: func(*testing.T) backend.Backend {
			return backend.NewStore(backend.NewMemoryKVStore(), nil)
		}})
	})
	t.Run("Filesystem", func(t *testing.T) {
		backendtest.Run(t, backendtest.Harness{New: newFS})
	})
	t.Run("LocalShell", func(t *testing.T) {
		backendtest.Run(t, backendtest.Harness{New: func(t *testing.T) backend.Backend { return newShell(t) }})
	})
	t.Run("CompositeDefault", func(t *testing.T) {
		backendtest.Run(t, backendtest.Harness{Root: "/work", New: func(t *testing.T) backend.Backend {
			return mustComposite(t, newFS(t), backend.Route{Prefix: "/mnt/", Backend: backend.NewStore(backend.NewMemoryKVStore(), nil)})
		}})
	})
	t.Run("CompositeRouteStore", func(t *testing.T) {
		backendtest.Run(t, backendtest.Harness{Root: "/mnt", New: func(t *testing.T) backend.Backend {
			return mustComposite(t, newFS(t), backend.Route{Prefix: "/mnt", Backend: backend.NewStore(backend.NewMemoryKVStore(), nil)})
		}})
	})
	t.Run("CompositeRouteFilesystem", func(t *testing.T) {
		backendtest.Run(t, backendtest.Harness{Root: "/deep/mnt", New: func(t *testing.T) backend.Backend {
			return mustComposite(t, backend.NewStore(backend.NewMemoryKVStore(), nil), backend.Route{Prefix: "/deep/mnt/", Backend: newFS(t)})
		}})
	})
	t.Run("CompositeStateRoute", func(t *testing.T) {
		h := backendtest.StateHarness()
		h.Root = "/notes"
		h.New = func(t *testing.T) backend.Backend {
			return mustComposite(t, newShell(t), backend.Route{Prefix: "/notes/", Backend: backend.NewState()})
		}
		backendtest.Run(t, h)
	})
}
