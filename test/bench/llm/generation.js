// What the in-process backends of bench.js share: the prompt as the chat template renders it, and
// one request's result in the shape every row is measured from.
import { performance } from 'node:perf_hooks';

/** The one-turn chat history for `prompt` and its tokens under the model's chat template. */
export function chatPrompt(model, chatWrapper, prompt) {
  const history = [
    { type: 'user', text: prompt },
    { type: 'model', response: [] },
  ];
  const { contextText } = chatWrapper.generateContextState({ chatHistory: history });
  return { history, tokens: contextText.tokenize(model.tokenizer) };
}

/**
 * A request that ended at `end` (ms): times, token counts and the text, the shape every row is
 * measured from.
 */
export function requestResult({ start, first, end, tokens, promptTokens, text }) {
  return { start, first: first ?? end, end, tokens, promptTokens, text };
}

/** A request that ended now, from its generated tokens (detokenized after the clock stops). */
export function tokensResult(model, { start, first, tokens, promptTokens }) {
  const end = performance.now();
  return requestResult({
    start,
    first,
    end,
    tokens: tokens.length,
    promptTokens,
    text: model.detokenize(tokens),
  });
}
