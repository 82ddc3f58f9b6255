"""Test doubles: a fake OpenAI-compatible server, a fake Ollama server, a tiny tool world."""
