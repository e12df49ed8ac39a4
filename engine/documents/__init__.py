"""The document side of the engine: parsing, chunking, question sets, evidence mapping,
question synthesis. No Django imports here."""
