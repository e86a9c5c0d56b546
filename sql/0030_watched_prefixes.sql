-- A watch may look at an S3 prefix (`s3://BUCKET/PREFIX/`, transcriber.watch.s3) as
-- well as a folder: the kept form ends with `/` (the bucket's top level: `s3://BUCKET/`).
ALTER TABLE watches DROP CONSTRAINT watches_folder_check;
ALTER TABLE watches ADD CONSTRAINT watches_folder_check
    CHECK ((folder LIKE '/%' OR folder ~ '^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/')
           AND length(folder) <= 4096);
