"""Stream one answer from a Messages-API or OpenAI-compatible server.

python examples/chat_stream.py http://127.0.0.1:8080 "Name three colors."
python examples/chat_stream.py http://127.0.0.1:8080/v1 "Name three colors."   # OpenAI-compatible
python examples/chat_stream.py "" "Hello"          # the hosted API (ANTHROPIC_API_KEY)
"""

from __future__ import annotations

import os
import sys

import anyio

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdk import Client


async def main(base_url: str | None, prompt: str, model: str) -> None:
    async with Client(base_url=base_url) as c:
        async with c.stream(
            model=model,
            max_tokens=int(os.environ.get("MAX_TOKENS", "256")),
            messages=[{"role": "user", "content": prompt}],
        ) as s:
            async for text in s.text_deltas():
                print(text, end="", flush=True)
        msg = await s.final_message()
    print(f"\n[{msg.stop_reason}; {msg.usage.input_tokens} in, {msg.usage.output_tokens} out]")


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
    prompt = sys.argv[2] if len(sys.argv) > 2 else "Say hello."
    model = os.environ.get("MODEL", "claude-sonnet-4-5" if url is None else "default")
    anyio.run(main, url, prompt, model)
