package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/agentserver"
	"github.com/dageval/dageval/harness/profile"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "serve agents over the LangGraph Agent Protocol (as remote async subagents)",
		usage:   "AGENT_FILE|factory:NAME... [--addr 127.0.0.1:8123] [--model SPEC] [--profile FILE]...",
		help: `Assembles each agent and serves it over the part of the LangGraph Agent
Protocol that Deep Agents' async subagents speak, so that another agent —
dageval's or Python Deep Agents' — can start, check, update, cancel and
list tasks on it (subagents: [{name, description, graph_id, url}]), and so
that it can be evaluated through its network interface.

Each agent is a graph: its graph_id (the assistant_id clients send) is the
agent file's name:, or the file's name without its extension; factory:NAME
serves the agent a Go factory registered with the program builds (see the
cli package; the dageval command itself has none), as graph NAME. An async
subagent of a served agent that has no url runs on this server, in
process: its graph_id names one of the graphs served here.

Served: GET /ok, /info; POST /assistants/search, GET /assistants/ID;
POST /threads, /threads/search, GET and DELETE /threads/ID, GET
/threads/ID/state; POST /threads/ID/runs (background), /runs/wait,
/runs/stream (server-sent events; stream_mode values, updates, messages,
custom), GET /threads/ID/runs, /runs/RUN, /runs/RUN/join, /runs/RUN/stream,
POST /runs/RUN/cancel; the same run routes without a thread (POST /runs,
/runs/wait, /runs/stream). Runs resume a paused thread with {"command":
{"resume": VALUE}}; multitask_strategy reject (the default), interrupt,
rollback and enqueue say what a run on a busy thread does. Threads live in
memory: they do not outlive the process.

--model overrides every agent's model; --profile files are merged over the
profile the registry has for each model, in order. The server listens on
--addr (a port of 0 picks a free one; the address is printed) and stops on
SIGINT or SIGTERM: running runs are cancelled, then open requests finish.`,
		run: runServe,
	})
}

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags(commands["serve"], e)
	addr := fs.String("addr", "127.0.0.1:8123", "address to listen on (host:port; port 0 picks a free one)")
	model := fs.String("model", "", "model spec overriding every agent's model")
	var profiles repeated
	fs.Var(&profiles, "profile", "harness profile file merged over the model's profile (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError("give at least one agent file (or factory:NAME) to serve")
	}
	srv := agentserver.New(agentserver.Options{})
	defer srv.Close()
	for _, arg := range pos {
		id, cfg, err := serveConfig(ctx, e.reg, arg, *model, profiles)
		if err != nil {
			return err
		}
		cfg.LocalGraphs = srv
		if cfg.Model == nil && cfg.ResolveModel == nil && len(e.reg.Providers()) > 0 {
			cfg.ResolveModel = e.reg.AgentFiles().ModelResolver(cfg.Profiles)
		}
		a, err := harness.New(cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", arg, err)
		}
		if err := srv.Add(id, a.Agent); err != nil {
			return fmt.Errorf("%s: %w (give the agent files different names)", arg, err)
		}
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", *addr, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(e.stdout, "dageval serve: serving %s at http://%s\n", strings.Join(srv.Graphs(), ", "), ln.Addr())

	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	// Runs first: a stream stays open until its run ends.
	srv.Close()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down: %w", err)
	}
	fmt.Fprintln(e.stdout, "dageval serve: stopped")
	return nil
}

// serveConfig builds the harness configuration of one served agent and
// its graph id.
func serveConfig(ctx context.Context, reg *evals.Registry, arg, model string, profileFiles []string) (string, harness.Config, error) {
	profs, err := loadProfiles(profileFiles)
	if err != nil {
		return "", harness.Config{}, err
	}
	if name, ok := strings.CutPrefix(arg, factoryPrefix); ok {
		f, ok := reg.Agent(name)
		if !ok {
			return "", harness.Config{}, fmt.Errorf("%s: no agent factory is registered as %q (%s)", arg, name, registeredNames(reg.Agents()))
		}
		cfg, err := f(ctx, evals.AgentRequest{Model: model})
		if err != nil {
			return "", harness.Config{}, fmt.Errorf("agent factory %s: %w", name, err)
		}
		if model != "" {
			cfg.Model, cfg.ModelSpec = nil, model
		}
		for _, p := range profs {
			cfg.Profile = profile.MergeHarness(cfg.Profile, p)
		}
		return name, cfg, nil
	}
	af, err := reg.AgentFiles().Load(arg)
	if err != nil {
		return "", harness.Config{}, err
	}
	cfg, err := af.Config(agentfile.Options{Model: model, Profiles: profs})
	if err != nil {
		return "", harness.Config{}, err
	}
	id := af.Name
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(arg), filepath.Ext(arg))
	}
	return id, cfg, nil
}
