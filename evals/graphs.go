package evals

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/agentserver"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// serveGraphs builds the cell's in-process deployment: an agentserver
// holding the suite's graphs, which the cell's url-less async subagents
// (and the graphs' own) reach through harness.Config.LocalGraphs, as under
// `dageval serve`. Each cell has its own, so thread and run ids number
// from one in every cell and a cell's recording does not depend on the
// others. A graph runs on its agent file's model, or on the cell's when it
// names none, through the cell's resolver: its calls are recorded in and
// replayed from the cell's cassette, each task in a lane of its own.
func (r *runner) serveGraphs(ctx context.Context, cell Cell, resolve func(string) (llm.ChatModel, error)) (*agentserver.Server, error) {
	s := r.s
	if len(s.Graphs) == 0 {
		return nil, nil
	}
	srv := agentserver.New(agentserver.Options{Clock: func() time.Time { return runClock }})
	for _, id := range slices.Sorted(maps.Keys(s.Graphs)) {
		src := s.Graphs[id]
		lanes := graphResolver(id, resolve)
		var cfg harness.Config
		if src.Factory != "" {
			f, ok := r.o.agentFactory(src.Factory)
			if !ok {
				srv.Close()
				return nil, fmt.Errorf("graph %s: no agent factory is registered as %q", id, src.Factory)
			}
			c, err := f(ctx, AgentRequest{Cell: cell.CellKey, Model: cell.Model})
			if err != nil {
				srv.Close()
				return nil, fmt.Errorf("graph %s: agent factory %s: %w", id, src.Factory, err)
			}
			cfg = c
			cfg.Model = nil
		} else {
			c, err := src.Spec.Config(agentfile.Options{
				Bind:         func(d agentfile.Tool) (tool.Tool, error) { return s.bind(cell.CaseDef, &r.o, d) },
				ResolveModel: lanes,
				ModelInfo:    s.ModelInfo,
				Getenv:       r.getenv,
			})
			if err != nil {
				srv.Close()
				return nil, fmt.Errorf("graph %s: %w", id, err)
			}
			cfg = c
		}
		if cfg.ModelSpec == "" {
			cfg.ModelSpec = cell.Model
		}
		cfg.ResolveModel, cfg.LocalGraphs = lanes, srv
		a, err := harness.New(cfg)
		if err == nil {
			err = srv.Add(id, a.Agent)
		}
		if err != nil {
			srv.Close()
			return nil, fmt.Errorf("graph %s: %w", id, err)
		}
	}
	return srv, nil
}

// graphResolver resolves a graph's models so that each of its tasks
// replays in its own lane ("graph:ID/THREAD/PATH"): tasks run
// concurrently with the cell's agent and with each other, and a lane
// keeps each one's calls in their recorded order whatever the interleaving.
func graphResolver(id string, resolve func(string) (llm.ChatModel, error)) func(string) (llm.ChatModel, error) {
	return func(spec string) (llm.ChatModel, error) {
		m, err := resolve(spec)
		if err != nil {
			return nil, err
		}
		if sm, ok := m.(llm.StreamingModel); ok {
			return streamingLaneModel{laneModel{m, id}, sm}, nil
		}
		return laneModel{m, id}, nil
	}
}

type laneModel struct {
	m     llm.ChatModel
	graph string
}

func (l laneModel) lane(ctx context.Context) context.Context {
	return recorder.WithLane(ctx, "graph:"+l.graph+"/"+agent.ThreadID(ctx)+"/"+agent.Lane(ctx))
}

func (l laneModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return l.m.Generate(l.lane(ctx), req)
}

// Identity keeps the model's identity (pricing, descriptions) visible
// through the wrapper.
func (l laneModel) Identity() llm.Identity {
	id, _ := llm.IdentityOf(l.m)
	return id
}

type streamingLaneModel struct {
	laneModel
	s llm.StreamingModel
}

func (l streamingLaneModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return l.s.Stream(l.lane(ctx), req)
}
