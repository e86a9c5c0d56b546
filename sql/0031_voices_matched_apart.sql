-- Voices named once, a stricter match (transcriber/records/voices_match.py is its Python
-- twin; transcriber/bench/voices.py measured it): the cosine alone named strangers after
-- library voices (a real person was 0.90 from a synthetic voice, more than the same real
-- person in two recordings, 0.88), because CAM++'s window means are all alike to some
-- degree, and some voices are alike to many. Each side of a pair is now measured against
-- a cohort of outsiders (`cohort`: unit vectors of voices nobody knows, made at run time,
-- transcriber/audio/voice_cohort.py): the mean cosine of its `top` most alike ones. A
-- found speaker and a library voice are a pair when their cosine is at least `threshold`
-- and beats the larger of the two sides' likeness to outsiders by `cohort_margin`. With
-- no cohort (`[]`) the cosine alone decides, as before. The most alike pair first, each
-- speaker and each voice once; keeping the found voices, and only for owners who
-- remember voices, is unchanged.

DROP FUNCTION name_found_voices(uuid, jsonb, float8);

CREATE FUNCTION name_found_voices(
    rec uuid, heard jsonb, threshold float8, cohort_margin float8, cohort jsonb, top integer
) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    who bigint;
    pair record;
    speakers_taken integer[] := '{}';
    voices_taken uuid[] := '{}';
    made integer := 0;
BEGIN
    DELETE FROM voice_matches WHERE recording_id = rec;
    DELETE FROM record_voices WHERE recording_id = rec;
    SELECT r.owner_id INTO who
      FROM recordings r JOIN owner_settings s ON s.owner_id = r.owner_id
     WHERE r.id = rec AND s.remember_voices;
    IF who IS NULL OR heard IS NULL OR jsonb_typeof(heard) <> 'array' THEN
        RETURN 0;
    END IF;
    INSERT INTO record_voices (recording_id, speaker, vector, seconds)
    SELECT rec, (f ->> 0)::integer,
           ARRAY(SELECT x::real FROM jsonb_array_elements_text(f -> 1) AS x),
           (f ->> 2)::float8
      FROM jsonb_array_elements(heard) AS f;
    FOR pair IN
        WITH outsiders AS (
            SELECT ARRAY(SELECT x::real FROM jsonb_array_elements_text(o) AS x) AS vector
              FROM jsonb_array_elements(coalesce(cohort, '[]'::jsonb)) AS o
        ), heard_out AS (
            SELECT rv.speaker, rv.vector,
                   (SELECT avg(alike) FROM (
                        SELECT (SELECT sum(a * b) FROM unnest(rv.vector, o.vector) AS u (a, b))
                               AS alike
                          FROM outsiders o ORDER BY 1 DESC LIMIT top) AS t) AS outside
              FROM record_voices rv WHERE rv.recording_id = rec
        ), voice_out AS (
            SELECT v.id, v.vector,
                   (SELECT avg(alike) FROM (
                        SELECT (SELECT sum(a * b) FROM unnest(v.vector, o.vector) AS u (a, b))
                               AS alike
                          FROM outsiders o ORDER BY 1 DESC LIMIT top) AS t) AS outside
              FROM voices v WHERE v.owner_id = who
        )
        SELECT pairs.* FROM (
            SELECT h.speaker, v.id,
                   (SELECT sum(a * b) FROM unnest(h.vector, v.vector) AS u (a, b)) AS cosine,
                   greatest(h.outside, v.outside) AS outside
              FROM heard_out h, voice_out v
        ) AS pairs
         WHERE pairs.cosine >= threshold
           AND (pairs.outside IS NULL OR pairs.cosine - pairs.outside >= cohort_margin)
         ORDER BY pairs.cosine DESC, pairs.speaker
    LOOP
        CONTINUE WHEN pair.speaker = ANY (speakers_taken) OR pair.id = ANY (voices_taken);
        INSERT INTO voice_matches (recording_id, speaker, voice_id, cosine)
        VALUES (rec, pair.speaker, pair.id, pair.cosine);
        speakers_taken := speakers_taken || pair.speaker;
        voices_taken := voices_taken || pair.id;
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
