// Package anthropic adapts the Anthropic Messages API (through anthropic-sdk-go/v2) to llm.ChatModel and llm.StreamingModel.
//
// Choices a careful user would expect, and why:
//
//   - Temperature, TopP and Seed are not sent. API version 2026-10-21, which
//     the v2 SDK speaks, answers any sampling parameter with a 400, and the
//     API has no seed. Dropping them keeps agents portable across providers.
//   - Thinking with BudgetTokens > 0 sends budget-based extended thinking,
//     except on models that reject it (Opus 4.7 and generation 5 on), which
//     get adaptive thinking; BudgetTokens 0 asks for adaptive thinking.
//   - Leading system messages join the system prompt; later ones stay in
//     place as system-role messages, which the API now accepts.
//   - Thinking blocks are sent back only with an Anthropic signature; thinking
//     produced by another provider, or unsigned, is dropped because Claude
//     would reject it.
//   - ResponseFormat uses native structured output (output_config.format);
//     object schemas are closed (additionalProperties: false) as it requires.
//   - The stop reason model_context_window_exceeded is reported as
//     llm.StopMaxTokens: the answer was cut short for lack of room.
//   - Message ids from the API are not copied into llm.Message.ID, because the
//     agent state treats ids as keys and replaces messages with equal ids.
//   - An answer is read the way it arrived, not the way it was asked for: an
//     event stream answering Generate is assembled as Stream would (replays
//     of streamed recordings), and a whole JSON answer to Stream is its one
//     final chunk. An error event inside a stream is the provider's error.
//   - Event streams are read with encoding/json into the few fields used;
//     the SDK sends every request and decodes every whole answer.
package anthropic
