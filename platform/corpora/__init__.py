"""Projects and what they hold: documents (the corpus) and question sets."""
