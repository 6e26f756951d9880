// Package openai adapts OpenAI's Responses API and any Chat Completions server (through openai-go/v3) to llm.ChatModel and llm.StreamingModel.
//
// Choices a careful user would expect, and why:
//
//   - KindOpenAI uses the Responses API unless Config.UseResponsesAPI says
//     otherwise; KindOpenAICompatible always uses Chat Completions, which is
//     what Ollama, vLLM, llama.cpp, OpenRouter, Groq, Gemini and Azure speak.
//   - Function tools are sent with strict false: the Responses API defaults
//     to strict, which rejects ordinary schemas, and our tools validate their
//     own arguments. A response format is sent strict only when its schema
//     meets strict mode's rules (closed objects, all properties required).
//   - Servers that omit tool-call ids get deterministic ones derived from the
//     answer and the conversation length, so replays are stable and ids
//     differ across turns.
//   - Arguments that are not valid JSON become llm.InvalidToolCalls, so the
//     model can be told and the call still answered.
//   - Reasoning: Responses API reasoning items come back as thinking blocks
//     whose signature ("openai-reasoning:{...}") carries the item id and any
//     encrypted content, and are sent back verbatim; reasoning_content or
//     reasoning text from compatible servers becomes unsigned thinking and is
//     not sent back. Gemini thought signatures are kept and returned in
//     extra_content as Gemini requires.
//   - Request.Thinking maps to a reasoning effort (budget ≤ 2048 low, ≤ 16384
//     medium, else high) for OpenAI itself; compatible servers take their own
//     knobs through Config.ExtraBody.
//   - Seed and stop sequences are not sent to the Responses API, which has
//     neither. Prompt tokens are split into uncached input and cache reads.
//   - An answer is read the way it arrived, not the way it was asked for: an
//     event stream answering Generate is assembled as Stream would (servers
//     that stream unasked, replays of streamed recordings), and a whole JSON
//     answer to Stream is its one final chunk.
//   - A Chat Completions stream that ends with [DONE] but whose chunks never
//     carried a finish_reason (some OpenRouter providers) is accepted with a
//     warning (llm.Response.Warnings) and an inferred stop reason; one that
//     ends without [DONE] was cut off and is a connection error. An answer
//     without usage (a stream without its usage chunk) has unknown usage
//     (llm.UnknownUsage), not zero. A tool-call delta that repeats the
//     call's id and whole name (Novita behind OpenRouter does, on every
//     delta) adds only its arguments; the name is not doubled.
//   - Event streams are read with encoding/json into the few fields used;
//     the SDK sends every request and decodes every whole answer, including
//     the final Responses object of a stream.
package openai
