//! Where operators upload sources: a bucket whose finalised objects are ingested.

use async_trait::async_trait;

use crate::Error;

/// A bucket of uploaded sources. Objects are read by name and generation, so what is ingested
/// is exactly the upload that was announced, even if the name has since been overwritten.
#[async_trait]
pub trait Uploads: Send + Sync + 'static {
    /// The bucket's name: notifications from any other bucket are refused.
    fn bucket(&self) -> &str;

    /// The bytes of `object` at `generation`, or `None` when that generation no longer
    /// exists. More than `limit` bytes is [`Error::TooLarge`], found before they are all read.
    async fn fetch(&self, object: &str, generation: i64, limit: u64) -> Result<Option<Vec<u8>>, Error>;
}
