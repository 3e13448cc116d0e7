"""The only SQLite code, and the export of what it holds (CSV, JSON)."""
