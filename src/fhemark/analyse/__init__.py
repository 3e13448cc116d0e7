"""From stored records to numbers: which records count, comparisons between runs, the cost model
and the application metrics."""
