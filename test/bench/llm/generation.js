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

/** A finished request, now: times (ms), token counts and the text, the shape every row is measured from. */
export function requestResult({ start, first, tokens, promptTokens, text }) {
  const end = performance.now();
  return { start, first: first ?? end, end, tokens, promptTokens, text };
}

/** A finished request from its generated tokens. */
export function tokensResult(model, { start, first, tokens, promptTokens }) {
  return requestResult({ start, first, tokens: tokens.length, promptTokens, text: model.detokenize(tokens) });
}
