/**
 * USD per million tokens for OpenAI's current models (input / cached input / output), from OpenAI's public
 * price list. The one place prices live; override or extend them with `Quota.middleware({ prices })`.
 * Dated snapshots (`gpt-4o-2024-08-06`) are priced as their family (the longest matching name).
 */
export const openAiPrices: Readonly<Record<string, { readonly input: number; readonly cachedInput: number; readonly output: number }>> = {
  "gpt-5": { input: 1.25, cachedInput: 0.125, output: 10 },
  "gpt-5-mini": { input: 0.25, cachedInput: 0.025, output: 2 },
  "gpt-5-nano": { input: 0.05, cachedInput: 0.005, output: 0.4 },
  "gpt-4.1": { input: 2, cachedInput: 0.5, output: 8 },
  "gpt-4.1-mini": { input: 0.4, cachedInput: 0.1, output: 1.6 },
  "gpt-4.1-nano": { input: 0.1, cachedInput: 0.025, output: 0.4 },
  "gpt-4o": { input: 2.5, cachedInput: 1.25, output: 10 },
  "gpt-4o-mini": { input: 0.15, cachedInput: 0.075, output: 0.6 },
  "o1": { input: 15, cachedInput: 7.5, output: 60 },
  "o3": { input: 2, cachedInput: 0.5, output: 8 },
  "o3-mini": { input: 1.1, cachedInput: 0.55, output: 4.4 },
  "o4-mini": { input: 1.1, cachedInput: 0.275, output: 4.4 },
  "gpt-4-turbo": { input: 10, cachedInput: 10, output: 30 },
  "gpt-3.5-turbo": { input: 0.5, cachedInput: 0.5, output: 1.5 }
}
