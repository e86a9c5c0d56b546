async def test_fixture_gives_migrated_db(db, owner_id):
    rid = await db.fetchval("accept", owner_id, "a.wav", 1, "/x", None, None)
    row = await db.fetchrow("recording", rid)
    assert row["milestone"] == "received"
