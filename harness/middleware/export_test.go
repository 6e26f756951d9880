package middleware

// Unexported defaults and helpers that the external tests compare against.

const (
	NoMemoryText            = noMemoryText
	DefaultMemoryPrompt     = defaultMemoryPrompt
	DefaultSkillsPrompt     = defaultSkillsPrompt
	MaxSkillFileSize        = maxSkillFileSize
	CompactNothingText      = compactNothingText
	DefaultTodoSystemPrompt = defaultTodoSystemPrompt
)

var (
	ParseSkill         = parseSkill
	SourceLabel        = sourceLabel
	ApproxTokens       = approxTokens
	ApproxCounter      = approxCounter
	DeleteDenyPatterns = (*PermissionSet).deleteDenyPatterns
)

// DefaultToolDescription is the built-in description of a filesystem tool
// as constructed ("" for unknown names).
func DefaultToolDescription(name string) string { return defaultDescriptions[name] }

// MemorySources returns m's memory file paths in rendering order.
func MemorySources(m *MemoryMiddleware) []string { return m.sources }

// SkillSources returns m's normalised sources in priority order.
func SkillSources(m *SkillsMiddleware) []SkillSource { return m.sources }

// TruncateJSONArgs and TruncateJSONArgsDecoder are the argument truncation
// of SummarizationMiddleware and the decoder it must agree with.
var (
	TruncateJSONArgs        = truncateJSONArgs
	TruncateJSONArgsDecoder = truncateJSONArgsDecoder
)

// ScanTruncatesArgs reports whether truncateJSONArgs answers for raw
// without the decoder.
func ScanTruncatesArgs(raw []byte, maxLen int) bool {
	_, _, ok := scanTruncateArgs(raw, maxLen, defaultTruncationText)
	return ok
}
