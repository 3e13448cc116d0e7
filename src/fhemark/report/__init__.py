"""Reports read stored records only (never a live run)."""
