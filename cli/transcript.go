package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/dageval/dageval/harness/llm"
)

// writeTranscript prints messages as a readable conversation.
func writeTranscript(w io.Writer, msgs []llm.Message) {
	for _, m := range msgs {
		head := string(m.Role)
		switch {
		case m.Role == llm.RoleTool:
			head = "tool " + m.Name
			if m.IsError {
				head += " (error)"
			}
		case m.Role == llm.RoleAssistant && m.Usage != nil:
			head += fmt.Sprintf("  [%d in / %d out tokens]", m.Usage.InputTokens, m.Usage.OutputTokens)
		}
		fmt.Fprintf(w, "── %s\n", head)
		if t := m.Text(); t != "" {
			fmt.Fprint(w, indent(t, "  "))
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(w, "  → %s %s\n", tc.Name, tc.Args)
		}
	}
}

func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}
