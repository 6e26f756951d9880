package scrub

import (
	"context"
	"log/slog"
)

// Handler returns a slog.Handler that scrubs each record's message and
// string attributes (in groups too) before h handles it.
func Handler(h slog.Handler, s *Scrubber) slog.Handler { return handler{h: h, s: s} }

type handler struct {
	h slog.Handler
	s *Scrubber
}

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.s.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, x := range g {
			out[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.s.String(err.Error()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return handler{h: h.h.WithAttrs(out), s: h.s}
}

func (h handler) WithGroup(name string) slog.Handler {
	return handler{h: h.h.WithGroup(name), s: h.s}
}
