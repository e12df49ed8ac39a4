"""The search side of the engine: the BM25 index the agent searches, its tool-call
formatting, and its persistence to S3. No Django imports here."""
