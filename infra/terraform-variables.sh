#!/usr/bin/env bash
# Offline check of the validation blocks in terraform/variables.tf: each case plans the
# variables alone (a configuration without resources needs no provider, so nothing is
# downloaded) and must be accepted, or refused with a message naming the variable.
# Usage: infra/terraform-variables.sh   (infra/test.sh runs it when terraform is installed)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$root/terraform/variables.tf" "$work/"
cd "$work"
terraform init -input=false -no-color >/dev/null

base=(-var project=harmonia-test-1)
failures=0
cases=0

# accept ARGS...: planning with ARGS must succeed.
accept() {
  cases=$((cases + 1))
  local out
  if ! out="$(terraform plan -input=false -lock=false -no-color "${base[@]}" "$@" 2>&1)"; then
    failures=$((failures + 1))
    printf 'FAIL: refused, expected accepted: %s\n%s\n' "$*" "$out"
  fi
}

# refuse NAME ARGS...: planning with ARGS must fail on NAME's validation.
refuse() {
  cases=$((cases + 1))
  local name="$1" out
  shift
  if out="$(terraform plan -input=false -lock=false -no-color "${base[@]}" "$@" 2>&1)"; then
    failures=$((failures + 1))
    printf 'FAIL: accepted, expected refused for %s: %s\n' "$name" "$*"
  elif ! grep -q "Invalid value for variable" <<<"$out" || ! grep -q "variable \"${name}\" {" <<<"$out"; then
    failures=$((failures + 1))
    printf 'FAIL: refused, but not by the %s validation: %s\n%s\n' "$name" "$*" "$out"
  fi
}

# The first, targeted apply creates the image repository before any image exists: no tag yet.
accept
accept -var image_tag=abc1234
refuse image_tag -var image_tag=
refuse image_tag -var image_tag=-latest
refuse project -var project=Harmonia_Test
refuse project -var project=abc
accept -var project=example.com:harmonia-test
accept -var region=europe-west4
accept -var region=northamerica-northeast1
refuse region -var region=us-central1-a
refuse region -var region=nam5
accept -var model=offline
accept -var model=vertex -var gemini_location=global
refuse model -var model=gemini
refuse model -var model=openai
refuse gemini_location -var gemini_location=us_central1
refuse gemini_model -var 'gemini_model=gemini 2.5'
refuse connector -var connector=bluesky
accept -var connector=webhook -var webhook_url=https://hooks.example.com/harmonia -var webhook_secret_version=2
refuse webhook_url -var connector=webhook -var webhook_secret_version=1
refuse webhook_url -var connector=webhook -var webhook_url=http://hooks.example.com -var webhook_secret_version=1
refuse webhook_url -var webhook_url=https://hooks.example.com/harmonia
refuse webhook_secret_version -var connector=webhook -var webhook_url=https://hooks.example.com/harmonia
refuse webhook_secret_version -var connector=webhook -var webhook_url=https://hooks.example.com/harmonia -var webhook_secret_version=latest
refuse webhook_secret_version -var webhook_secret_version=1
accept -var otlp_endpoint=http://collector.internal:4318 -var trace_exporter=otlp
accept -var trace_exporter=cloud_trace
refuse otlp_endpoint -var otlp_endpoint=collector.internal:4318
refuse trace_exporter -var trace_exporter=jaeger
refuse trace_exporter -var trace_exporter=otlp
refuse google_jwks_url -var google_jwks_url=http://www.googleapis.com/oauth2/v3/certs
accept -var log_level=debug
refuse log_level -var log_level=verbose
accept -var source_retention_days=0
accept -var source_retention_days=365
refuse source_retention_days -var source_retention_days=-1
refuse source_retention_days -var source_retention_days=1.5
accept -var model_max_instances=10 -var max_instances=20
refuse model_max_instances -var model_max_instances=0
refuse model_max_instances -var model_max_instances=1.5
refuse max_instances -var max_instances=101
accept -var 'operator_principals={"ana@example.com"={operator="ana",workspace="brand"}}'
refuse operator_principals -var 'operator_principals={"Ana@Example.com"={operator="ana",workspace="brand"}}'
refuse operator_principals -var 'operator_principals={"ana@example.com"={operator="ana",workspace="-brand"}}'
accept -var 'channel_accounts={brand-bsky={platform="bluesky",handle="@brand.bsky.social",secret_version="1"},brand-social={platform="mastodon",handle="@brand@social.example",secret_version="3"}}'
refuse channel_accounts -var 'channel_accounts={Brand={platform="bluesky",handle="brand.bsky.social",secret_version="1"}}'
accept -var 'channel_accounts={brand-li={platform="linkedin",handle="brand",secret_version="1"},brand-x={platform="x",handle="@brand",secret_version="2"}}'
refuse channel_accounts -var 'channel_accounts={brand={platform="instagram",handle="brand",secret_version="1"}}'
refuse channel_accounts -var 'channel_accounts={brand={platform="bluesky",handle="brand bsky",secret_version="1"}}'
refuse channel_accounts -var 'channel_accounts={brand={platform="bluesky",handle="brand.bsky.social",secret_version="latest"}}'
refuse channel_accounts -var 'channel_accounts={a={platform="bluesky",handle="@Brand.bsky.social",secret_version="1"},b={platform="bluesky",handle="brand.bsky.social",secret_version="2"}}'

if [ "$failures" -ne 0 ]; then
  echo "terraform variables: $failures of $cases cases failed"
  exit 1
fi
echo "terraform variables: $cases cases accepted or refused as expected"
