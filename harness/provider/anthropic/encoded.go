package anthropic

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/dageval/dageval/harness/provider"
)

// marshalParam is an SDK param that encodes itself.
type marshalParam interface {
	param.ParamStruct
	MarshalJSON() ([]byte, error)
}

// preEncode encodes p once and returns a param that the SDK sends as those
// bytes (see provider.Encoded), with their size; when the SDK would not
// send them unchanged it returns p itself and 0.
func preEncode[T marshalParam, PT param.InferPtr[T]](p T) (T, int) {
	raw, err := p.MarshalJSON()
	if err != nil {
		return p, 0
	}
	o := param.Override[T, PT](json.RawMessage(raw))
	if again, err := o.MarshalJSON(); err != nil || !bytes.Equal(raw, again) {
		return p, 0
	}
	return o, len(raw)
}

// escapeHTML is whether anthropic-sdk-go's encoder escapes <, > and & (it
// does).
const escapeHTML = true

// spliced returns p set to send the JSON it encodes to, built from its
// system blocks, turns and tools as they were pre-encoded (see provider.Splice) instead of
// by the SDK's encoder on every call; p itself when they cannot be
// spliced. The parameters keep every field, for the SDK reads some (the
// timeout follows max_tokens).
func spliced(p sdk.MessageNewParams) sdk.MessageNewParams {
	shell := p
	var lists [][][]byte
	if elems, ok := provider.ListJSON(p.System, escapeHTML); ok {
		shell.System = []sdk.TextBlockParam{param.Override[sdk.TextBlockParam](provider.Hole(len(lists)))}
		lists = append(lists, elems)
	}
	if elems, ok := provider.ListJSON(p.Messages, escapeHTML); ok {
		shell.Messages = []sdk.MessageParam{param.Override[sdk.MessageParam](provider.Hole(len(lists)))}
		lists = append(lists, elems)
	}
	if elems, ok := provider.ListJSON(p.Tools, escapeHTML); ok {
		shell.Tools = []sdk.ToolUnionParam{param.Override[sdk.ToolUnionParam](provider.Hole(len(lists)))}
		lists = append(lists, elems)
	}
	if len(lists) == 0 {
		return p
	}
	raw, err := shell.MarshalJSON()
	if err != nil {
		return p
	}
	if body, ok := provider.Splice(raw, lists, escapeHTML); ok {
		param.SetJSON(body, &p)
	}
	return p
}

// direct returns what to hand the SDK for p, and the options that come
// with it, so that the SDK sends the body spliced (which p carries as its
// JSON) without encoding or compacting it again: p with an empty object as
// its JSON, whose fields the SDK still reads (the timeout follows
// max_tokens), and options that set the body and then the config's extra
// body fields, which the client's own options set on the empty object and
// which are set again here the same way in the same order. The SDK's
// "stream" comes after every call option, as it does on the body it
// encodes. A platform's client options may set body fields of their own
// (anthropic_version), so a platform's request, or one not spliced, is
// sent as it is.
func (m *Model) direct(p sdk.MessageNewParams) (sdk.MessageNewParams, []option.RequestOption) {
	v, ok := p.Overrides()
	body, isRaw := v.(json.RawMessage)
	if !ok || !isRaw || m.platform != nil || !provider.PlainKeys(m.cfg.ExtraBody) {
		return p, nil
	}
	param.SetJSON([]byte("{}"), &p)
	// A fresh copy per attempt: the SDK's buffer is its own to change.
	opts := []option.RequestOption{option.WithRequestBody("application/json", bytes.Clone(body))}
	for _, k := range slices.Sorted(maps.Keys(m.cfg.ExtraBody)) {
		opts = append(opts, option.WithJSONSet(k, m.cfg.ExtraBody[k]))
	}
	return p, opts
}
