"""Answers to "what should I use": recommend (from the store), the parameter advisor (verified
by running), choose (a user's computation, searched, proven, measured) and the snippets."""
