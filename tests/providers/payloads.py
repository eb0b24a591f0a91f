"""Realistic response bodies written from ../shared/providers.md (shapes and quirks as documented there).

``CONTENT`` is one token/logprob content; ``*_EQUIVALENT`` payloads carry it in each wire format so
the adapters can be shown to normalize them to the same tokens.
"""

from __future__ import annotations

from typing import Any

# (token, logprob, bytes, alternatives[(token, logprob, bytes)])
CONTENT: list[tuple[str, float, list[int], list[tuple[str, float, list[int]]]]] = [
    ("Hello", -0.31725305, [72, 101, 108, 108, 111],
     [("Hello", -0.31725305, [72, 101, 108, 108, 111]), ("Hi", -1.3190403, [72, 105]), ("Hey", -3.2, [72, 101, 121])]),
    ("!", -0.02380986, [33],
     [("!", -0.02380986, [33]), (" there", -3.787621, [32, 116, 104, 101, 114, 101]), (".", -5.1, [46])]),
]
TEXT = "Hello!"


def _chat_content(with_bytes: bool = True, with_ids: bool = False) -> list[dict[str, Any]]:
    out = []
    for i, (tok, lp, b, alts) in enumerate(CONTENT):
        entry: dict[str, Any] = {"token": tok, "logprob": lp, "bytes": b if with_bytes else None,
                                 "top_logprobs": [{"token": t, "logprob": v, "bytes": bb if with_bytes else None}
                                                  for t, v, bb in alts]}
        if with_ids:
            entry["id"] = 9906 + i
            for j, a in enumerate(entry["top_logprobs"]):
                a["id"] = 100 * i + j
        out.append(entry)
    return out


OPENAI_EQUIVALENT: dict[str, Any] = {
    "id": "chatcmpl-123", "object": "chat.completion", "created": 1702685778, "model": "gpt-4o-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT, "refusal": None},
                 "logprobs": {"content": _chat_content(), "refusal": None}, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
}

LLAMA_SERVER_EQUIVALENT: dict[str, Any] = {
    "choices": [{"finish_reason": "length", "index": 0, "message": {"role": "assistant", "content": TEXT},
                 "logprobs": {"content": _chat_content(with_ids=True)}}],
    "created": 1760000000, "model": "local", "system_fingerprint": "b1-0c1e570", "object": "chat.completion",
    "usage": {"completion_tokens": 2, "prompt_tokens": 10, "total_tokens": 12}, "id": "chatcmpl-abc",
    "timings": {"prompt_n": 10},
}

TOGETHER_EQUIVALENT: dict[str, Any] = {
    "id": "8f-EWR", "object": "chat.completion", "created": 1760000000,
    "model": "meta-llama/Llama-3.3-70B-Instruct-Turbo", "prompt": [],
    "choices": [{"index": 0, "finish_reason": "length", "seed": 123,
                 "message": {"role": "assistant", "content": TEXT},
                 "logprobs": {"token_ids": [9906, 0], "tokens": [c[0] for c in CONTENT],
                              "token_logprobs": [c[1] for c in CONTENT],
                              "top_logprobs": [{t: v for t, v, _ in c[3]} for c in CONTENT]}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
}

RESPONSES_EQUIVALENT: dict[str, Any] = {
    "id": "resp_abc", "object": "response", "created_at": 1760000000, "status": "completed", "model": "gpt-4.1-mini",
    "output": [{"id": "msg_abc", "type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": TEXT, "annotations": [],
                             "logprobs": [{k: v for k, v in e.items()} for e in _chat_content()]}]}],
    "top_logprobs": 3, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    "usage": {"input_tokens": 9, "output_tokens": 2, "total_tokens": 11,
              "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
}

GEMINI_EQUIVALENT: dict[str, Any] = {
    "candidates": [{
        "content": {"role": "model", "parts": [{"text": TEXT}]}, "finishReason": "STOP", "avgLogprobs": -0.1706,
        "logprobsResult": {
            "topCandidates": [{"candidates": [{"token": t, "tokenId": 1000 + j, "logProbability": v}
                                              for j, (t, v, _) in enumerate(c[3])]} for c in CONTENT],
            "chosenCandidates": [{"token": c[0], "tokenId": 9906 + i, "logProbability": c[1]}
                                 for i, c in enumerate(CONTENT)],
            "logProbabilitySum": -0.341,
        },
    }],
    "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
    "modelVersion": "gemini-2.0-flash",
}

# --- quirks -------------------------------------------------------------------------------------

OPENAI_SENTINEL: dict[str, Any] = {  # -9999 placeholder, special token with bytes null, leading spaces
    "id": "chatcmpl-9", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": " How there", "refusal": None},
                 "logprobs": {"content": [
                     {"token": " How", "logprob": -0.2, "bytes": [32, 72, 111, 119],
                      "top_logprobs": [{"token": " How", "logprob": -0.2, "bytes": [32, 72, 111, 119]},
                                       {"token": "<|end|>", "logprob": -9999.0, "bytes": None}]},
                     {"token": " there", "logprob": -9999.0, "bytes": [32, 116, 104, 101, 114, 101],
                      "top_logprobs": []}],
                     "refusal": None},
                 "finish_reason": "length"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}

VLLM_REPLACEMENT: dict[str, Any] = {  # '�' tokens whose bytes are the replacement character's
    "id": "chatcmpl-7f", "object": "chat.completion", "created": 1760000000, "model": "Qwen/Qwen3-8B",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "🌍 A", "reasoning": None, "tool_calls": []},
                 "logprobs": {"content": [
                     {"token": "�", "logprob": -0.5, "bytes": [239, 191, 189],
                      "top_logprobs": [{"token": "�", "logprob": -0.5, "bytes": [239, 191, 189]}]},
                     {"token": "�", "logprob": -0.01, "bytes": [239, 191, 189],
                      "top_logprobs": [{"token": "�", "logprob": -0.01, "bytes": [239, 191, 189]}]},
                     {"token": " A", "logprob": -0.1, "bytes": [32, 65],
                      "top_logprobs": [{"token": " A", "logprob": -0.1, "bytes": [32, 65]}]}]},
                 "finish_reason": "length", "stop_reason": None, "token_ids": None}],
    "usage": {"prompt_tokens": 10, "total_tokens": 13, "completion_tokens": 3}, "prompt_logprobs": None,
}

LLAMACPP_SPLIT_UTF8: dict[str, Any] = {  # token strings truncated to valid UTF-8, raw bytes carried
    "choices": [{"finish_reason": "length", "index": 0, "message": {"role": "assistant", "content": None},
                 "logprobs": {"content": [
                     {"id": 1, "token": "", "bytes": [240, 159, 140], "logprob": -1.0, "top_logprobs": []},
                     {"id": 2, "token": "", "bytes": [141], "logprob": -0.5, "top_logprobs": []}]}}],
    "created": 1, "model": "local", "object": "chat.completion", "id": "chatcmpl-utf8",
    "usage": {"completion_tokens": 2, "prompt_tokens": 3, "total_tokens": 5},
}

DEEPSEEK_ESCAPED: dict[str, Any] = {  # partial UTF-8 alternative as an escaped string with true bytes
    "id": "d1", "object": "chat.completion", "created": 1, "model": "deepseek-chat",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "🌍"}, "finish_reason": "length",
                 "logprobs": {"content": [
                     {"token": "\\xf0\\x9f\\x8c", "logprob": -0.2, "bytes": [240, 159, 140],
                      "top_logprobs": [{"token": "\\xf0\\x9f\\x8c", "logprob": -0.2, "bytes": [240, 159, 140]},
                                       {"token": "\\xf0\\x9f\\x98", "logprob": -13.8, "bytes": [240, 159, 152]}]},
                     {"token": "\\x8d", "logprob": -0.001, "bytes": [141],
                      "top_logprobs": [{"token": "\\x8d", "logprob": -0.001, "bytes": [141]}]}]}}],
    "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
}

OLLAMA_NO_TOP_KEY: dict[str, Any] = {  # top_logprobs omitted (omitempty) when 0 were asked
    "id": "chatcmpl-123", "object": "chat.completion", "created": 1767225600, "model": "llama3.2",
    "system_fingerprint": "fp_ollama",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "length",
                 "logprobs": {"content": [{"token": "Hi", "logprob": -0.3, "bytes": [72, 105]}]}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}

OLLAMA_SILENT_DROP: dict[str, Any] = {  # older endpoints accept logprobs and return none
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": "llama3.2",
    "system_fingerprint": "fp_ollama",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "B"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}

OPENROUTER_BYTES_NULL: dict[str, Any] = {
    "id": "gen-1", "object": "chat.completion", "created": 1, "model": "openai/gpt-4o-mini", "provider": "OpenAI",
    "choices": [{"index": 0, "finish_reason": "stop", "native_finish_reason": "stop",
                 "message": {"role": "assistant", "content": " Hello", "refusal": None},
                 "logprobs": {"content": [{"bytes": None, "logprob": -0.612345, "token": " Hello",
                                           "top_logprobs": []}], "refusal": None}}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}

FIREWORKS_NEW_LOGPROBS: dict[str, Any] = {
    "id": "fw-1", "object": "chat.completion", "created": 1760000000,
    "model": "accounts/fireworks/models/llama-v3p1-8b-instruct",
    "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": TEXT},
                 "logprobs": {"content": [
                     {"token": t, "logprob": lp, "sampling_logprob": lp + 0.02, "bytes": b, "token_id": 9906 + i,
                      "text_offset": 5 * i,
                      "top_logprobs": [{"token": at, "logprob": av, "token_id": 100 * i + j, "bytes": ab}
                                       for j, (at, av, ab) in enumerate(alts)]}
                     for i, (t, lp, b, alts) in enumerate(CONTENT)]}}],
    "usage": {"prompt_tokens": 10, "total_tokens": 12, "completion_tokens": 2},
}

OPENAI_REFUSAL_MESSAGE: dict[str, Any] = {
    "id": "chatcmpl-r", "object": "chat.completion", "created": 1, "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                         "refusal": "I'm sorry, I can't help with that."},
                 "logprobs": {"content": None, "refusal": [
                     {"token": "I'm", "logprob": -0.01, "bytes": [73, 39, 109], "top_logprobs": []}]},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
}

LEGACY_COMPLETION: dict[str, Any] = {
    "id": "cmpl-abc", "object": "text_completion", "created": 1700000000, "model": "gpt-3.5-turbo-instruct",
    "choices": [{"text": " 2,", "index": 0, "finish_reason": "length",
                 "logprobs": {"tokens": [" 2", ","], "token_logprobs": [-0.037809037, -0.008346983],
                              "top_logprobs": [{" 2": -0.037809037, " 3": -4.1, " two": -5.6},
                                               {",": -0.008346983, ".": -5.3, " ,": -7.0}],
                              "text_offset": [9, 11]}}],
    "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
}

GEMINI_ZERO_LOGPROB: dict[str, Any] = {  # a certain token: 0.0 given explicitly, and omitted (proto3 default)
    "candidates": [{
        "content": {"role": "model", "parts": [{"text": "Yes"}]}, "finishReason": "STOP", "avgLogprobs": 0.0,
        "logprobsResult": {
            "topCandidates": [{"candidates": [{"token": "Yes", "tokenId": 7, "logProbability": 0.0},
                                              {"token": "No", "tokenId": 8, "logProbability": -25.5}]}],
            "chosenCandidates": [{"token": "Yes", "tokenId": 7}],
        },
    }],
    "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4},
    "modelVersion": "gemini-2.0-flash",
}

GEMINI_AVG_ONLY: dict[str, Any] = {  # avgLogprobs without logprobsResult (BerriAI/litellm#8890)
    "candidates": [{"content": {"parts": [{"text": "B"}], "role": "model"}, "finishReason": "STOP",
                    "avgLogprobs": -0.3445799010140555}],
    "usageMetadata": {"promptTokenCount": 1339, "candidatesTokenCount": 42, "totalTokenCount": 1381},
    "modelVersion": "gemini-2.0-flash",
}

ANTHROPIC_MESSAGE: dict[str, Any] = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "B"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 11, "output_tokens": 1},
}

# --- error bodies -------------------------------------------------------------------------------

OPENAI_429 = {"error": {"message": "Rate limit reached for gpt-4o-mini in organization org-x on requests per min "
                                   "(RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
                        "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
OPENAI_QUOTA = {"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                          "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
OPENAI_LOGPROBS_400 = {"error": {"message": "Unsupported parameter: 'logprobs' is not supported with this model.",
                                 "type": "invalid_request_error", "param": "logprobs",
                                 "code": "unsupported_parameter"}}
OPENAI_LOGPROBS_403 = {"error": {"message": "You are not allowed to request logprobs from this model",
                                 "type": "invalid_request_error", "param": None, "code": None}}
OPENAI_TEMPERATURE_400 = {"error": {"message": "Unsupported value: 'temperature' does not support 0.7 with this "
                                               "model. Only the default (1) value is supported.",
                                    "type": "invalid_request_error", "param": "temperature",
                                    "code": "unsupported_value"}}
OPENAI_401 = {"error": {"message": "Incorrect API key provided: sk-abc***. You can find your API key at "
                                   "https://platform.openai.com/account/api-keys.",
                        "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
VLLM_400 = {"error": {"message": "Requested sample logprobs of 21, which is greater than max allowed: 20",
                      "type": "BadRequestError", "param": None, "code": 400}}
VLLM_OLD_400 = {"object": "error", "message": "`top_logprobs` must be a positive value or -1.",
                "type": "BadRequestError", "param": None, "code": 400}
AZURE_429 = {"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI "
                                                 "API version 2024-08-01-preview have exceeded token rate limit of "
                                                 "your current OpenAI S0 pricing tier. Please retry after 7 seconds."}}
AZURE_CONTENT_FILTER = {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's "
                                             "content management policy.", "type": None, "param": "prompt",
                                  "code": "content_filter", "status": 400}}
ANTHROPIC_529 = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                 "request_id": "req_011"}
ANTHROPIC_429 = {"type": "error", "error": {"type": "rate_limit_error",
                                            "message": "This request would exceed the rate limit for your "
                                                       "organization of 80,000 input tokens per minute."},
                 "request_id": "req_011CSLsW7mFqvHHnzrKdKjAE"}
ANTHROPIC_SPEND = {"type": "error", "error": {"type": "rate_limit_error", "message": "spend limit reached",
                                              "details": {"error_code": "enforced_spend_limit_reached"}},
                   "request_id": "req_1"}
ANTHROPIC_TEMPERATURE_400 = {"type": "error", "error": {"type": "invalid_request_error",
                                                        "message": "`temperature` is deprecated for this model."},
                             "request_id": "req_2"}
ANTHROPIC_BOTH_400 = {"type": "error", "error": {"type": "invalid_request_error",
                                                 "message": "`temperature` and `top_p` cannot both be specified for "
                                                            "this model. Please use only one."}, "request_id": "req_3"}
GEMINI_LOGPROBS_400 = {"error": {"code": 400, "message": "Logprobs is not enabled for models/gemini-2.5-pro",
                                 "status": "INVALID_ARGUMENT"}}
GEMINI_LOGPROBS_400_SUPPORTED = {"error": {"code": 400, "message": "Logprobs is not supported for the current model.",
                                           "status": "INVALID_ARGUMENT"}}
GEMINI_429 = {"error": {"code": 429, "message": "You exceeded your current quota. Please retry in 38.922534355s.",
                        "status": "RESOURCE_EXHAUSTED", "details": [
                            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                                {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                                 "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                                 "quotaDimensions": {"location": "global", "model": "gemini-2.0-flash"},
                                 "quotaValue": "15"}]},
                            {"@type": "type.googleapis.com/google.rpc.Help", "links": []},
                            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "47s"}]}}
GEMINI_429_DAILY = {"error": {"code": 429, "message": "You exceeded your current quota.",
                              "status": "RESOURCE_EXHAUSTED", "details": [
                                  {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                                      {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
                                  {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3600s"}]}}
GEMINI_503 = {"error": {"code": 503, "message": "The model is overloaded. Please try again later.",
                        "status": "UNAVAILABLE"}}
OPENROUTER_200_ERROR = {"error": {"code": 502, "message": "Provider returned error",
                                  "metadata": {"provider_name": "X"}}}
OPENROUTER_402 = {"error": {"code": 402, "message": "Insufficient credits."}}
OPENROUTER_403_MODERATION = {"error": {"code": 403, "message": "Your input was flagged by moderation",
                                       "metadata": {"reasons": ["violence"]}}}
