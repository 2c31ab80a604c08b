# Every variable that takes one of a fixed set of values, or a value the functions parse at
# start-up, is validated here: a typo fails `terraform plan` with the variable's name instead
# of deploying revisions that stop with `invalid_config`.

variable "project" {
  description = "Google Cloud project id."
  type        = string
  validation {
    # A project id, optionally domain-scoped (example.com:my-project).
    condition     = can(regex("^([a-z0-9][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project))
    error_message = "project must be a Google Cloud project id: 6-30 lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "region" {
  description = "Region for Cloud Run, Artifact Registry, Firestore and Vertex AI."
  type        = string
  default     = "us-central1"
  validation {
    # A single region (us-central1, europe-west4, northamerica-northeast1): not a zone, and not a
    # multi-region such as nam5 or eur3, which Cloud Run and Artifact Registry do not take here.
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a Google Cloud region such as us-central1 (not a zone or a multi-region)."
  }
}

variable "image_tag" {
  description = "Tag of the pushed function image (the _TAG of infra/cloudbuild.yaml, e.g. a git commit). Needed by every apply except the first, targeted one that creates the image repository."
  type        = string
  default     = null
  validation {
    condition     = var.image_tag == null || can(regex("^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$", var.image_tag))
    error_message = "image_tag must be a container image tag: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'."
  }
}

variable "model" {
  description = "Model backend of the specialists: \"vertex\" (Gemini on Vertex AI, through the functions' service accounts) or \"offline\"."
  type        = string
  default     = "vertex"
  validation {
    condition     = contains(["vertex", "offline"], var.model)
    error_message = "model must be vertex or offline."
  }
}

variable "gemini_location" {
  description = "Vertex AI location of the Gemini model: a region, or \"global\"; unset, the deployment's region."
  type        = string
  default     = null
  validation {
    condition     = var.gemini_location == null || can(regex("^[a-z][a-z0-9-]*$", var.gemini_location))
    error_message = "gemini_location must be a Vertex AI location such as us-central1, or global."
  }
}

variable "gemini_model" {
  description = "Vertex AI Gemini model name."
  type        = string
  default     = "gemini-2.5-flash"
  validation {
    # The characters the functions accept in GEMINI_MODEL.
    condition     = can(regex("^[A-Za-z0-9._/@-]+$", var.gemini_model))
    error_message = "gemini_model must be a model name such as gemini-2.5-flash."
  }
}

variable "connector" {
  description = "Publishing connector: \"sandbox\" or \"webhook\" (which needs webhook_url and webhook_secret_version)."
  type        = string
  default     = "sandbox"
  validation {
    condition     = contains(["sandbox", "webhook"], var.connector)
    error_message = "connector must be sandbox or webhook."
  }
}

variable "webhook_url" {
  description = "HTTPS endpoint of the webhook connector; required when connector = \"webhook\", otherwise empty."
  type        = string
  default     = ""
  validation {
    condition     = var.connector == "webhook" ? can(regex("^https://[^/?#\\s]+", var.webhook_url)) : var.webhook_url == ""
    error_message = "webhook_url must be an https:// URL when connector = \"webhook\", and empty otherwise."
  }
}

variable "webhook_secret_version" {
  description = "Version of the harmonia-webhook-signing secret the publish and verify functions sign with (the number `gcloud secrets versions add` printed); required when connector = \"webhook\", otherwise empty. Naming a version, not `latest`, rolls out a rotated secret as a new revision."
  type        = string
  default     = ""
  validation {
    condition     = var.connector == "webhook" ? can(regex("^[1-9][0-9]*$", var.webhook_secret_version)) : var.webhook_secret_version == ""
    error_message = "webhook_secret_version must be a secret version number (1, 2, ...) when connector = \"webhook\", and empty otherwise."
  }
}

variable "channel_accounts" {
  description = "Channels published with credentials of their own (Bluesky, Mastodon, LinkedIn, X): name => { platform (bluesky, mastodon, linkedin or x), handle (as the workspace's [[channels]] entry writes it), secret_version }. Terraform creates the secret harmonia-channel-<name> for each and never sees its value: add the channel's [[channel]] entry as a version (README, \"Channel accounts\") and name its number here. Only the publish and verify functions can read the secrets; policy and the operator are told which channels exist, never their credentials."
  type = map(object({
    platform       = string
    handle         = string
    secret_version = string
  }))
  default = {}
  validation {
    # A name becomes part of a secret id and a volume name.
    condition     = alltrue([for name in keys(var.channel_accounts) : can(regex("^[a-z][a-z0-9-]{0,39}$", name))])
    error_message = "channel_accounts names must be lowercase letters, digits and '-', starting with a letter, up to 40 characters."
  }
  validation {
    condition     = alltrue([for a in values(var.channel_accounts) : contains(["bluesky", "mastodon", "linkedin", "x"], a.platform)])
    error_message = "channel_accounts platforms must be bluesky, mastodon, linkedin or x."
  }
  validation {
    condition     = alltrue([for a in values(var.channel_accounts) : can(regex("^[^\\s]{1,200}$", a.handle))])
    error_message = "channel_accounts handles must be 1 to 200 characters without spaces."
  }
  validation {
    condition     = alltrue([for a in values(var.channel_accounts) : can(regex("^[1-9][0-9]*$", a.secret_version))])
    error_message = "channel_accounts secret_version must be a secret version number (1, 2, ...), not latest: a rotated secret rolls out as a new revision."
  }
  validation {
    # The functions compare handles without a leading @ and case-insensitively.
    condition     = length(distinct([for a in values(var.channel_accounts) : "${a.platform} ${lower(trimprefix(a.handle, "@"))}"])) == length(var.channel_accounts)
    error_message = "channel_accounts names the same channel twice."
  }
}

variable "otlp_endpoint" {
  description = "OTLP/HTTP collector URL the functions export traces and metrics to (e.g. a Cloud Run OpenTelemetry collector forwarding to Cloud Trace and Cloud Monitoring). Empty: no export."
  type        = string
  default     = ""
  validation {
    condition     = var.otlp_endpoint == "" || can(regex("^https?://[^/?#\\s]+", var.otlp_endpoint))
    error_message = "otlp_endpoint must be empty or an http:// or https:// URL."
  }
}

variable "google_jwks_url" {
  description = "URL of the key set that signs the callers' Google ID tokens; the functions fetch it and cache it as its Cache-Control allows, refreshing when Google rotates its keys."
  type        = string
  default     = "https://www.googleapis.com/oauth2/v3/certs"
  validation {
    condition     = can(regex("^https://[^/?#\\s]+", var.google_jwks_url))
    error_message = "google_jwks_url must be an https:// URL."
  }
}

variable "trace_exporter" {
  description = "Span exporter of the functions: \"otlp\" (to otlp_endpoint), \"cloud_trace\" (Cloud Trace's API, with the functions' service accounts) or \"none\". Empty: otlp when otlp_endpoint is set, otherwise none."
  type        = string
  default     = ""
  validation {
    condition     = contains(["", "otlp", "cloud_trace", "none"], var.trace_exporter)
    error_message = "trace_exporter must be empty, otlp, cloud_trace or none."
  }
  validation {
    # The functions refuse to start with an OTLP exporter and no endpoint.
    condition     = var.trace_exporter != "otlp" || var.otlp_endpoint != ""
    error_message = "trace_exporter = \"otlp\" needs otlp_endpoint."
  }
}

variable "log_level" {
  description = "Least severe log level the functions write to Cloud Logging: trace, debug, info, warn or error."
  type        = string
  default     = "info"
  validation {
    condition     = contains(["trace", "debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be trace, debug, info, warn or error."
  }
}

variable "model_max_instances" {
  description = "Most instances of each function that calls the model (analyze, strategize, plan, draft, review, operator, nova): a ceiling on concurrent Vertex AI calls and their cost. Pushes beyond it are refused and Pub/Sub redelivers them with backoff."
  type        = number
  default     = 3
  validation {
    condition     = var.model_max_instances >= 1 && var.model_max_instances <= 100 && floor(var.model_max_instances) == var.model_max_instances
    error_message = "model_max_instances must be a whole number from 1 to 100."
  }
}

variable "max_instances" {
  description = "Most instances of each other function (ingest, policy, publish, verify, deadletter)."
  type        = number
  default     = 5
  validation {
    condition     = var.max_instances >= 1 && var.max_instances <= 100 && floor(var.max_instances) == var.max_instances
    error_message = "max_instances must be a whole number from 1 to 100."
  }
}

variable "operator_principals" {
  description = "Operators allowed to call the operator, ingest and Nova functions: lowercase email => { operator, workspace }."
  type = map(object({
    operator  = string
    workspace = string
  }))
  default = {}
  validation {
    # Emails are matched lowercase; ids use the functions' identifier pattern.
    condition = alltrue([
      for email, p in var.operator_principals :
      can(regex("^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]+$", email))
      && can(regex("^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$", p.operator))
      && can(regex("^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$", p.workspace))
    ])
    error_message = "operator_principals keys must be lowercase emails, and each operator and workspace an id of letters, digits, '.', '_', ':' and '-' (up to 128, starting with a letter or digit)."
  }
}

variable "source_retention_days" {
  description = "Days an uploaded source is kept, unchangeable, in the sources bucket (0: no retention policy)."
  type        = number
  default     = 30
  validation {
    condition     = var.source_retention_days >= 0 && var.source_retention_days <= 3650 && floor(var.source_retention_days) == var.source_retention_days
    error_message = "source_retention_days must be a whole number of days from 0 to 3650."
  }
}

variable "operator_console" {
  description = "Serve the operator console to browsers: the operator service skips Cloud Run's invoker IAM check (a browser cannot send an ID token with a page load) and its own sign-in guards every route but the page, its assets and /healthz. false: every caller of the operator service needs an ID token (CLI and API only)."
  type        = bool
  default     = true
}
