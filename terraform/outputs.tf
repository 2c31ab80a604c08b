output "service_urls" {
  description = "URL of each function's Cloud Run service."
  value       = { for f, s in google_cloud_run_v2_service.function : f => s.uri }
}

output "operator_urls" {
  description = "URL of ingest, operator and Nova to call them at; callers' ID tokens must name it as their audience."
  value       = local.public_urls
}

output "topics" {
  description = "Stage topics and their dead-letter topics."
  value       = concat([for t in google_pubsub_topic.stage : t.name], [for t in google_pubsub_topic.dead_letter : t.name])
}

output "image_repository" {
  description = "Where the function image is pushed."
  value       = local.image_base
}

output "sources_bucket" {
  description = "The bucket operators upload sources to; each finalised object is ingested."
  value       = google_storage_bucket.sources.name
}

output "blob_bucket" {
  description = "The bucket holding long sources' transcripts (content-addressed blobs)."
  value       = google_storage_bucket.blobs.name
}
