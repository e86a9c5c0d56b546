"""Subtitles by a broadcaster's rules: the profiles (a small table of rules each, with
its source), cues built from the transcript's word times (`cues`), lines broken where a
reader expects (`lines`), and a checker that reports every rule a subtitle file breaks
(`check`), for the service's own files and anyone else's."""
