locals {
  services = toset([
    "run.googleapis.com",
    "pubsub.googleapis.com",
    "firestore.googleapis.com",
    "storage.googleapis.com",
    "aiplatform.googleapis.com",
    "artifactregistry.googleapis.com",
    "secretmanager.googleapis.com",
    "iam.googleapis.com",
    "cloudbuild.googleapis.com",
    # Project metadata and project-level IAM grants, which Terraform itself reads and writes.
    "cloudresourcemanager.googleapis.com",
    # ID tokens minted for an operator's service account (README, first operator access).
    "iamcredentials.googleapis.com",
    # The dispatcher's minute tick.
    "cloudscheduler.googleapis.com",
  ])
  route_map       = { for r in local.routes : "${r.topic}.${r.function}" => r }
  image_base      = "${var.region}-docker.pkg.dev/${var.project}/${google_artifact_registry_repository.images.repository_id}"
  stage_functions = toset([for f in local.functions : f if !contains(local.public_functions, f) && !contains(local.scheduled_functions, f)])

  # Cloud Run's deterministic URL of each function people call: the audience their ID tokens
  # must name, which the functions verify (known before the services exist).
  public_urls = { for f in local.public_functions : f => "https://harmonia-${f}-${data.google_project.this.number}.${var.region}.run.app" }

  # The connector's settings, given only to the functions that use it: every function parses
  # HARMONIA_CONNECTOR at start-up, and "webhook" without WEBHOOK_SECRET stops it, so a stage
  # that never publishes must not be told about the webhook.
  # Blob storage (long sources' transcripts): the functions that take sources write them, the
  # ones that read a whole source read them; no other function is granted the bucket.
  blob_writers = ["ingest", "operator"]
  blob_readers = ["ingest", "operator", "analyze"]

  connector_env = merge(
    { HARMONIA_CONNECTOR = var.connector },
    var.connector == "webhook" ? { WEBHOOK_URL = var.webhook_url } : {},
    length(var.channel_accounts) > 0 ? { HARMONIA_CHANNEL_SECRETS = "/secrets/channels" } : {},
  )

  # Where posts go, without a credential: policy judges every draft against it, and the
  # functions holding the credentials refuse to start if theirs differ (HARMONIA_PUBLISHING).
  publishing = jsonencode({
    connector = var.connector
    accounts  = [for name, a in var.channel_accounts : { platform = a.platform, handle = a.handle, connector = a.platform }]
  })

  # Each connector user's grant on each channel's secret.
  channel_readers = merge([
    for f in local.connector_users : { for name in keys(var.channel_accounts) : "${f}.${name}" => { function = f, channel = name } }
  ]...)
}

data "google_project" "this" {}

resource "google_project_service" "required" {
  for_each           = local.services
  service            = each.value
  disable_on_destroy = false
}

resource "google_firestore_database" "default" {
  name                    = "(default)"
  location_id             = var.region
  type                    = "FIRESTORE_NATIVE"
  delete_protection_state = "DELETE_PROTECTION_ENABLED"
  depends_on              = [google_project_service.required]
}

resource "google_artifact_registry_repository" "images" {
  # checkov:skip=CKV_GCP_84: images hold no secrets; Google-managed encryption is sufficient here
  location      = var.region
  repository_id = "harmonia"
  format        = "DOCKER"
  depends_on    = [google_project_service.required]
}

# The webhook connector's signing secret. Terraform creates the empty secret and never sees its
# value: the operator adds a version with gcloud and names it in var.webhook_secret_version
# (README, "Deploying to Google Cloud"). With the sandbox connector nothing reads it, so a
# deployment never refers to a version that does not exist.
resource "google_secret_manager_secret" "webhook_signing" {
  secret_id = "harmonia-webhook-signing"
  replication {
    auto {}
  }
  depends_on = [google_project_service.required]
}

# One secret per channel account, holding that channel's [[channel]] entry (README, "Channel
# accounts"). As with the webhook's, Terraform creates the empty secret and never sees its
# value: the operator adds a version with gcloud and names it in var.channel_accounts.
resource "google_secret_manager_secret" "channel" {
  for_each  = var.channel_accounts
  secret_id = "harmonia-channel-${each.key}"
  replication {
    auto {}
  }
  depends_on = [google_project_service.required]
}

# Who may call ingest, operator and Nova: the verified email of a Google-signed ID token
# mapped to an operator and a workspace (from var.operator_principals). The functions read the
# file once, at start-up, so the services mount the exact version below: a change to the map
# is a new version and therefore a new revision.
resource "google_secret_manager_secret" "operator_principals" {
  secret_id = "harmonia-operator-principals"
  replication {
    auto {}
  }
  depends_on = [google_project_service.required]
}

resource "google_secret_manager_secret_version" "operator_principals" {
  secret      = google_secret_manager_secret.operator_principals.id
  secret_data = jsonencode(var.operator_principals)
  # A changed map replaces the version: the running revision keeps reading the old version
  # until the new revision that mounts the new one has taken over.
  lifecycle {
    create_before_destroy = true
  }
}

# ---- topics: one per stage event, each with its dead-letter topic

resource "google_pubsub_topic" "stage" {
  # checkov:skip=CKV_GCP_83: events carry ids only (no content); Google-managed encryption is sufficient
  for_each   = toset(local.topics)
  name       = each.value
  depends_on = [google_project_service.required]
}

resource "google_pubsub_topic" "dead_letter" {
  # checkov:skip=CKV_GCP_83: dead letters carry the same id-only events
  for_each   = toset(local.topics)
  name       = "${each.value}.dead-letter"
  depends_on = [google_project_service.required]
}

# ---- blob storage: content-addressed transcripts of long sources

resource "google_storage_bucket" "blobs" {
  # checkov:skip=CKV_GCP_62: access is recorded by Cloud Audit Logs; a second log bucket adds nothing
  name                        = "${var.project}-harmonia-blobs"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  # Blobs are written once under their digest and never replaced; versioning keeps a deleted
  # one recoverable.
  versioning {
    enabled = true
  }
}

resource "google_storage_bucket_iam_member" "blob_creator" {
  for_each = toset(local.blob_writers)
  bucket   = google_storage_bucket.blobs.name
  role     = "roles/storage.objectCreator"
  member   = "serviceAccount:${google_service_account.function[each.value].email}"
}

resource "google_storage_bucket_iam_member" "blob_viewer" {
  for_each = toset(local.blob_readers)
  bucket   = google_storage_bucket.blobs.name
  role     = "roles/storage.objectViewer"
  member   = "serviceAccount:${google_service_account.function[each.value].email}"
}

# ---- the sources bucket: an object finalised here is ingested (HARMONIA_SOURCES_BUCKET)

resource "google_storage_bucket" "sources" {
  # checkov:skip=CKV_GCP_62: access is recorded by Cloud Audit Logs; a second log bucket adds nothing
  name                        = "${var.project}-harmonia-sources"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  # An overwritten or deleted upload stays recoverable; ingest reads the announced generation.
  versioning {
    enabled = true
  }
  dynamic "retention_policy" {
    for_each = var.source_retention_days > 0 ? [1] : []
    content {
      retention_period = var.source_retention_days * 86400
    }
  }
}

# Cloud Storage's own service agent publishes the notifications.
data "google_storage_project_service_account" "gcs" {}

resource "google_pubsub_topic_iam_member" "gcs_notifier" {
  topic  = google_pubsub_topic.stage["source.uploaded"].name
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:${data.google_storage_project_service_account.gcs.email_address}"
}

resource "google_storage_notification" "sources" {
  bucket         = google_storage_bucket.sources.name
  payload_format = "JSON_API_V1"
  topic          = google_pubsub_topic.stage["source.uploaded"].id
  event_types    = ["OBJECT_FINALIZE"]
  depends_on     = [google_pubsub_topic_iam_member.gcs_notifier]
}

# The listed operators upload sources (they cannot read, replace or delete them).
resource "google_storage_bucket_iam_member" "sources_uploader" {
  for_each = var.operator_principals
  bucket   = google_storage_bucket.sources.name
  role     = "roles/storage.objectCreator"
  member   = endswith(each.key, ".gserviceaccount.com") ? "serviceAccount:${each.key}" : "user:${each.key}"
}

# Only the ingest function reads uploads.
resource "google_storage_bucket_iam_member" "sources_reader" {
  bucket = google_storage_bucket.sources.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.function["ingest"].email}"
}

# ---- identities: one service account per function, and the push invoker

resource "google_service_account" "function" {
  for_each     = toset(local.functions)
  account_id   = "harmonia-${each.value}"
  display_name = "Harmonia ${each.value} function"
}

resource "google_service_account" "invoker" {
  account_id   = "harmonia-push-invoker"
  display_name = "Harmonia Pub/Sub push invoker"
}

# The identity Cloud Scheduler signs its OIDC tokens as when it calls the dispatcher.
resource "google_service_account" "scheduler" {
  account_id   = "harmonia-scheduler"
  display_name = "Harmonia dispatcher's Cloud Scheduler caller"
}

resource "google_project_iam_member" "firestore_user" {
  for_each = toset(local.functions)
  project  = var.project
  role     = "roles/datastore.user"
  member   = "serviceAccount:${google_service_account.function[each.value].email}"
}

resource "google_project_iam_member" "trace_writer" {
  for_each = var.trace_exporter == "cloud_trace" ? toset(local.functions) : toset([])
  project  = var.project
  role     = "roles/cloudtrace.agent"
  member   = "serviceAccount:${google_service_account.function[each.value].email}"
}

resource "google_project_iam_member" "vertex_user" {
  for_each = toset(local.model_callers)
  project  = var.project
  role     = "roles/aiplatform.user"
  member   = "serviceAccount:${google_service_account.function[each.value].email}"
}

resource "google_pubsub_topic_iam_member" "publisher" {
  for_each = merge([
    for f, topics in local.publishes : { for t in topics : "${f}.${t}" => { function = f, topic = t } }
  ]...)
  topic  = google_pubsub_topic.stage[each.value.topic].name
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:${google_service_account.function[each.value.function].email}"
}

resource "google_secret_manager_secret_iam_member" "principals_reader" {
  for_each  = toset(local.public_functions)
  secret_id = google_secret_manager_secret.operator_principals.id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.function[each.value].email}"
}

resource "google_secret_manager_secret_iam_member" "webhook_reader" {
  for_each  = var.connector == "webhook" ? toset(local.connector_users) : toset([])
  secret_id = google_secret_manager_secret.webhook_signing.id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.function[each.value].email}"
}

resource "google_secret_manager_secret_iam_member" "channel_reader" {
  for_each  = local.channel_readers
  secret_id = google_secret_manager_secret.channel[each.value.channel].id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.function[each.value.function].email}"
}

# Pub/Sub's service agent forwards dead letters and acknowledges the originals.
resource "google_pubsub_topic_iam_member" "dead_letter_forwarder" {
  for_each = google_pubsub_topic.dead_letter
  topic    = each.value.name
  role     = "roles/pubsub.publisher"
  member   = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_pubsub_subscription_iam_member" "dead_letter_acker" {
  for_each     = google_pubsub_subscription.push
  subscription = each.value.name
  role         = "roles/pubsub.subscriber"
  member       = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

# ---- functions: one Cloud Run service each

resource "google_cloud_run_v2_service" "function" {
  for_each = toset(local.functions)
  name     = "harmonia-${each.value}"
  location = var.region
  # The scheduled dispatcher takes requests from Cloud Scheduler, which does not call from the
  # project's network: like the public functions it relies on Cloud Run IAM (only the
  # scheduler's account may invoke it, below).
  ingress             = contains(concat(local.public_functions, local.scheduled_functions), each.value) ? "INGRESS_TRAFFIC_ALL" : "INGRESS_TRAFFIC_INTERNAL_ONLY"
  deletion_protection = false
  # A browser cannot send an ID token with a page load, so the operator service that serves the
  # console skips Cloud Run's invoker check when var.operator_console is on: its own sign-in
  # (credential or Google ID token, then a server-side session) guards every route but the
  # page, its assets and /healthz.
  invoker_iam_disabled = each.value == "operator" && var.operator_console

  template {
    service_account = google_service_account.function[each.value].email

    # Model callers are capped lower: each instance holds Vertex AI calls open. A push beyond
    # the cap is refused and Pub/Sub redelivers it with backoff.
    scaling {
      max_instance_count = contains(local.model_callers, each.value) ? var.model_max_instances : var.max_instances
    }

    dynamic "volumes" {
      for_each = contains(local.public_functions, each.value) ? [1] : []
      content {
        name = "operator-auth"
        secret {
          secret = google_secret_manager_secret.operator_principals.secret_id
          items {
            version = google_secret_manager_secret_version.operator_principals.version
            path    = "principals.json"
          }
        }
      }
    }

    # Each channel account's secret, mounted in the functions that publish and read back
    # (HARMONIA_CHANNEL_SECRETS reads the directory of them).
    dynamic "volumes" {
      for_each = contains(local.connector_users, each.value) ? var.channel_accounts : {}
      content {
        name = "channel-${volumes.key}"
        secret {
          secret = google_secret_manager_secret.channel[volumes.key].secret_id
          items {
            version = volumes.value.secret_version
            path    = "channel.toml"
          }
        }
      }
    }

    containers {
      image   = "${local.image_base}/harmonia-functions:${var.image_tag}"
      command = ["/app/bin/harmonia-${each.value}"]
      env {
        name  = "GOOGLE_CLOUD_PROJECT"
        value = var.project
      }
      env {
        name  = "HARMONIA_STORE"
        value = "firestore"
      }
      env {
        name  = "HARMONIA_BLOBS"
        value = "gcs:${google_storage_bucket.blobs.name}"
      }
      dynamic "env" {
        for_each = each.value == "ingest" ? [google_storage_bucket.sources.name] : []
        content {
          name  = "HARMONIA_SOURCES_BUCKET"
          value = env.value
        }
      }
      env {
        name  = "HARMONIA_MODEL"
        value = var.model
      }
      env {
        name  = "GEMINI_LOCATION"
        value = coalesce(var.gemini_location, var.region)
      }
      env {
        name  = "GEMINI_MODEL"
        value = var.gemini_model
      }
      env {
        name  = "HARMONIA_LOG"
        value = var.log_level
      }
      env {
        name  = "HARMONIA_LOG_FORMAT"
        value = "json"
      }
      env {
        name  = "HARMONIA_OTLP_ENDPOINT"
        value = var.otlp_endpoint
      }
      env {
        name  = "HARMONIA_TRACE_EXPORTER"
        value = var.trace_exporter
      }
      dynamic "env" {
        for_each = contains(local.connector_users, each.value) ? local.connector_env : {}
        content {
          name  = env.key
          value = env.value
        }
      }
      # The console's questions to Nova go through the operator function (its own origin).
      dynamic "env" {
        for_each = each.value == "operator" ? [local.public_urls["nova"]] : []
        content {
          name  = "HARMONIA_NOVA_URL"
          value = env.value
        }
      }
      dynamic "env" {
        for_each = contains(local.publishing_users, each.value) ? [local.publishing] : []
        content {
          name  = "HARMONIA_PUBLISHING"
          value = env.value
        }
      }
      dynamic "env" {
        for_each = contains(local.connector_users, each.value) && var.connector == "webhook" ? [var.webhook_secret_version] : []
        content {
          name = "WEBHOOK_SECRET"
          value_source {
            secret_key_ref {
              secret  = google_secret_manager_secret.webhook_signing.secret_id
              version = env.value
            }
          }
        }
      }
      dynamic "env" {
        for_each = contains(local.public_functions, each.value) ? {
          HARMONIA_GOOGLE_AUDIENCE   = local.public_urls[each.value]
          HARMONIA_GOOGLE_PRINCIPALS = "/secrets/operator-auth/principals.json"
          HARMONIA_GOOGLE_JWKS       = var.google_jwks_url
        } : {}
        content {
          name  = env.key
          value = env.value
        }
      }
      dynamic "volume_mounts" {
        for_each = contains(local.public_functions, each.value) ? ["operator-auth"] : []
        content {
          name       = volume_mounts.value
          mount_path = "/secrets/${volume_mounts.value}"
        }
      }
      dynamic "volume_mounts" {
        for_each = contains(local.connector_users, each.value) ? var.channel_accounts : {}
        content {
          name       = "channel-${volume_mounts.key}"
          mount_path = "/secrets/channels/${volume_mounts.key}"
        }
      }
    }
  }
  lifecycle {
    precondition {
      condition     = var.image_tag != null
      error_message = "image_tag is required: the tag of the image pushed to the harmonia repository (README, \"Deploying to Google Cloud\")."
    }
  }

  # A revision reads its secrets as it starts: the access grants must exist first.
  depends_on = [
    google_project_service.required,
    google_secret_manager_secret_iam_member.webhook_reader,
    google_secret_manager_secret_iam_member.principals_reader,
    google_secret_manager_secret_iam_member.channel_reader,
  ]
}

# Only the push invoker may call the stage functions (and ingest, for the uploads' pushes).
resource "google_cloud_run_v2_service_iam_member" "push_invoker" {
  for_each = setunion(local.stage_functions, ["ingest"])
  name     = google_cloud_run_v2_service.function[each.value].name
  location = var.region
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.invoker.email}"
}

# Only the scheduler's account may call the dispatcher.
# The operator function forwards the console's questions to Nova, with ID tokens it mints as
# its own service account: the one service-to-service call between the functions.
resource "google_cloud_run_v2_service_iam_member" "operator_asks_nova" {
  name     = google_cloud_run_v2_service.function["nova"].name
  location = var.region
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.function["operator"].email}"
}

resource "google_cloud_run_v2_service_iam_member" "scheduler_invoker" {
  for_each = toset(local.scheduled_functions)
  name     = google_cloud_run_v2_service.function[each.value].name
  location = var.region
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.scheduler.email}"
}

# Every minute, one tick of the dispatcher: what is due goes to publishing (README, "Scheduled
# publishing"). A failed tick is not retried: the next one, a minute later, does the same work,
# and overlapping ticks are safe (each post is one transaction on its own schedule).
resource "google_cloud_scheduler_job" "dispatch" {
  name             = "harmonia-dispatch"
  region           = var.region
  schedule         = "* * * * *"
  time_zone        = "Etc/UTC"
  attempt_deadline = "60s"
  retry_config {
    retry_count = 0
  }
  http_target {
    http_method = "POST"
    uri         = "${google_cloud_run_v2_service.function["dispatch"].uri}/dispatch"
    oidc_token {
      service_account_email = google_service_account.scheduler.email
      audience              = google_cloud_run_v2_service.function["dispatch"].uri
    }
  }
  depends_on = [google_project_service.required, google_cloud_run_v2_service_iam_member.scheduler_invoker]
}

# Operators (authenticated Google identities) may call ingest, operator and Nova. A listed
# service account is one an operator impersonates to mint ID tokens for a service's URL (the
# audience the functions require, which gcloud issues only to service accounts).
resource "google_cloud_run_v2_service_iam_member" "operators" {
  for_each = merge([
    for f in local.public_functions : { for email, p in var.operator_principals : "${f}.${email}" => { function = f, email = email } }
  ]...)
  name     = google_cloud_run_v2_service.function[each.value.function].name
  location = var.region
  role     = "roles/run.invoker"
  member   = endswith(each.value.email, ".gserviceaccount.com") ? "serviceAccount:${each.value.email}" : "user:${each.value.email}"
}

# ---- push subscriptions: one per route, OIDC from the invoker, retries and dead letters

resource "google_pubsub_subscription" "push" {
  for_each                   = local.route_map
  name                       = each.key
  topic                      = google_pubsub_topic.stage[each.value.topic].id
  ack_deadline_seconds       = each.value.calls_model ? 300 : 60
  message_retention_duration = "604800s"

  push_config {
    push_endpoint = "${google_cloud_run_v2_service.function[each.value.function].uri}/push/${each.value.topic}"
    oidc_token {
      service_account_email = google_service_account.invoker.email
      audience              = google_cloud_run_v2_service.function[each.value.function].uri
    }
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.dead_letter[each.value.topic].id
    max_delivery_attempts = 10
  }

  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
}

# The dead-letter recorder's own subscriptions: retried (without a further dead letter).
resource "google_pubsub_subscription" "dead_letter_recorder" {
  for_each             = toset(local.topics)
  name                 = "${each.value}.dead-letter.deadletter"
  topic                = google_pubsub_topic.dead_letter[each.value].id
  ack_deadline_seconds = 60

  push_config {
    push_endpoint = "${google_cloud_run_v2_service.function["deadletter"].uri}/push/${each.value}.dead-letter"
    oidc_token {
      service_account_email = google_service_account.invoker.email
      audience              = google_cloud_run_v2_service.function["deadletter"].uri
    }
  }

  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
}
