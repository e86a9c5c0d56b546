-- What recognition has heard so far of a record it is working on, piece by piece (a piece
-- is a segment's text): read by the OpenAI endpoint's `stream=true` requests
-- (`transcript.text.delta`) while the step runs. Written only by the claim's holder,
-- fenced by its token as every write of a step; a later attempt's pieces replace an
-- earlier one's. Gone with the record. The final transcript, not these, is the record's.
CREATE TABLE recognition_drafts (
    recording_id uuid NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    claim_token  uuid NOT NULL,
    piece        integer NOT NULL CHECK (piece >= 0),
    text         text NOT NULL,
    PRIMARY KEY (recording_id, claim_token, piece)
);
