"""An owner's records as the owner reads them: cards, transcripts and corrections."""
