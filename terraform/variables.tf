variable "project" {
  description = "Google Cloud project id."
  type        = string
}

variable "region" {
  description = "Region for Cloud Run, Artifact Registry and Firestore."
  type        = string
  default     = "us-central1"
}

variable "image_tag" {
  description = "Tag of the function images in the Artifact Registry repository (e.g. a git commit)."
  type        = string
}

variable "model" {
  description = "Model backend of the specialists: \"gemini\" (Vertex AI) or \"offline\"."
  type        = string
  default     = "gemini"
}

variable "gemini_model" {
  description = "Vertex AI Gemini model name."
  type        = string
  default     = "gemini-2.5-flash"
}

variable "connector" {
  description = "Publishing connector: \"sandbox\" or \"webhook\"."
  type        = string
  default     = "sandbox"
}

variable "webhook_url" {
  description = "Endpoint of the webhook connector (used when connector = \"webhook\")."
  type        = string
  default     = ""
}

variable "otlp_endpoint" {
  description = "OTLP/HTTP collector URL the functions export traces and metrics to (e.g. a Cloud Run OpenTelemetry collector forwarding to Cloud Trace and Cloud Monitoring). Empty: no export."
  type        = string
  default     = ""
}

variable "google_jwks_url" {
  description = "URL of the key set that signs the callers' Google ID tokens; the functions fetch it and cache it as its Cache-Control allows, refreshing when Google rotates its keys."
  type        = string
  default     = "https://www.googleapis.com/oauth2/v3/certs"
}

variable "trace_exporter" {
  description = "Span exporter of the functions: \"otlp\" (to otlp_endpoint), \"cloud_trace\" (Cloud Trace's API, with the functions' service accounts) or \"none\". Empty: otlp when otlp_endpoint is set, otherwise none."
  type        = string
  default     = ""
  validation {
    condition     = contains(["", "otlp", "cloud_trace", "none"], var.trace_exporter)
    error_message = "trace_exporter must be empty, otlp, cloud_trace or none."
  }
}

variable "operator_principals" {
  description = "Operators allowed to call the operator, ingest and Nova functions: email => { operator, workspace }."
  type = map(object({
    operator  = string
    workspace = string
  }))
  default = {}
}
