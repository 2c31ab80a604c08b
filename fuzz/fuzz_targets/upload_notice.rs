//! A Cloud Storage notification of an uploaded source, as the ingest function decodes it
//! (`ObjectNotice::decode`) before anything is read from the bucket. What it accepts names a
//! real object: a bucket, a name within Cloud Storage's length, a positive generation and a
//! size that is not negative; anything else is `invalid_request`.
#![no_main]

use harmonia_contracts::Code;
use harmonia_pipeline::steps::ObjectNotice;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    match ObjectNotice::decode(bytes) {
        Ok(notice) => {
            assert!(!notice.bucket.is_empty() && !notice.name.is_empty() && notice.name.len() <= 1024);
            assert!(notice.generation > 0 && notice.size >= 0);
            assert!(notice.url().starts_with("gs://"));
        }
        Err(e) => assert_eq!(e.code, Code::InvalidRequest),
    }
});
