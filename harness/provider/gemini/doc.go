// Package gemini adapts Google's Gemini API (through google.golang.org/genai) to llm.ChatModel and llm.StreamingModel.
//
// Choices a careful user would expect, and why:
//
//   - The spec prefixes gemini: and google_genai: (LangChain's provider
//     name, as Deep Agents users write it) both resolve here; Gemini's
//     OpenAI-compatible endpoint stays available as gemini-openai:.
//   - The key goes in x-goog-api-key, never in a key= query parameter, so
//     it cannot end up in a logged or recorded URL. The SDK never uses
//     GEMINI_API_KEY, GOOGLE_API_KEY or GOOGLE_GEMINI_BASE_URL itself:
//     provider.Config decides, as for every adapter. (The SDK still logs a
//     warning when both key variables are set, though it uses neither.)
//   - Thought signatures are kept in thinking blocks ("gemini:<sig>" for a
//     text or thought part, "gemini-call:<id>:<sig>" for a function call)
//     and sent back on the part they came with; Gemini 3 rejects a history
//     whose function calls lost them. Thought summaries are asked for when
//     Request.Thinking is set and come back as signed thinking blocks;
//     unsigned thinking and other providers' reasoning are not sent.
//   - Function calls without an id get a deterministic one ("gemini_…",
//     derived from the answer and the conversation length) that is never
//     sent back as a Gemini id; ids Gemini gives are kept and returned on
//     the function response. Tool results go back as {"output": text}, or
//     {"error": text} for a failed tool, the keys Gemini documents; the
//     results of one turn's calls share one user turn.
//   - Tools are declared with parametersJsonSchema (full JSON Schema, minus
//     $schema and $id); ResponseFormat uses responseJsonSchema with the
//     application/json MIME type. Request.Thinking maps to a thinking
//     budget (0 means dynamic). Cache-control markers are not sent: Gemini
//     caches implicitly, and its cached tokens are reported as cache reads.
//   - Usage: the prompt count includes cached tokens, so InputTokens is the
//     prompt minus cachedContentTokenCount (plus the prompt of server-side
//     tool use) and OutputTokens adds thoughtsTokenCount to the candidates.
//   - Gemini says STOP when it calls functions; that is llm.StopToolUse.
//     Safety, recitation and blocklist stops, and a blocked prompt, are
//     llm.StopContentFilter.
//   - Streams, whole answers and recordings in either shape (server-sent
//     events with alt=sse, one JSON array without it) decode alike,
//     whichever way the call was made, so a recording replays through
//     Generate and Stream. The SDK's automatic continuation is off: retries
//     and their recording belong to provider.RetryPolicy.
//   - Each answer reports its latency (llm.Response.Latency) as the other
//     adapters do: the recorded duration and time to the first event that
//     a recorder announces (provider.DurationHeader, FirstEventHeader) when
//     replaying, the clock's when live.
//   - Gemini asks for a stream in the path (:streamGenerateContent, with
//     alt=sse), not in the body. A cassette matched by body therefore tells
//     a streamed call from a whole one by its path, as it tells them apart
//     by "stream" for the other providers, and misses saying so; matched
//     in order the two are one route (fakes/cassette.RoutePath).
package gemini
