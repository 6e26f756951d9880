package middleware

// The names middleware report in a stack. They are Deep Agents' class names,
// so that profile files written for Deep Agents (excluded_middleware:
// [SummarizationMiddleware]) mean the same thing here.
const (
	FilesystemName             = "FilesystemMiddleware"
	SubAgentName               = "SubAgentMiddleware"
	AsyncSubAgentName          = "AsyncSubAgentMiddleware"
	SummarizationName          = "SummarizationMiddleware"
	SummarizationToolName      = "SummarizationToolMiddleware"
	PatchToolCallsName         = "PatchToolCallsMiddleware"
	TodoListName               = "TodoListMiddleware"
	AnthropicPromptCachingName = "AnthropicPromptCachingMiddleware"
	BedrockPromptCachingName   = "BedrockPromptCachingMiddleware"
	SkillsName                 = "SkillsMiddleware"
	MemoryName                 = "MemoryMiddleware"
	HumanInTheLoopName         = "HumanInTheLoopMiddleware"
	// ToolExclusionName starts with an underscore, as in Deep Agents, so that
	// a profile cannot exclude the middleware that enforces its own
	// excluded_tools.
	ToolExclusionName = "_ToolExclusionMiddleware"
	// RubricName is dageval's own grader middleware; Deep Agents has none.
	RubricName = "RubricMiddleware"
)
