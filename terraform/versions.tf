terraform {
  # 1.9: variable validations that refer to other variables (webhook_url needs connector).
  required_version = ">= 1.9"
  required_providers {
    google = {
      source = "hashicorp/google"
      # 6.10: invoker_iam_disabled on Cloud Run services (the console's operator service).
      version = ">= 6.10, < 8.0"
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}
