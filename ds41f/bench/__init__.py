"""`ds41f bench`: the serving benchmark against an OpenAI-compatible endpoint (see docs/stages/verify.md)."""
