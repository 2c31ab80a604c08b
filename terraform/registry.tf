# The one list of functions, topics and subscriptions, kept equal to the code's registry
# (shared/pipeline/src/registry.rs and the topics of shared/contracts/src/event.rs) by a test.
locals {
  functions = ["ingest", "analyze", "strategize", "plan", "draft", "review", "policy", "publish", "verify", "operator", "deadletter", "nova", "dispatch"]

  topics = [
    "source.ingested",
    "analysis.completed",
    "strategy.proposed",
    "strategy.approved",
    "plan.item_selected",
    "draft.written",
    "review.revise",
    "review.passed",
    "policy.passed",
    "draft.approved",
    "post.published",
    "post.verified",
    # Not a stage event: the sources bucket's Cloud Storage notifications (main.tf).
    "source.uploaded",
  ]

  routes = [
    { function = "analyze", topic = "source.ingested", calls_model = true },
    { function = "strategize", topic = "analysis.completed", calls_model = true },
    { function = "plan", topic = "strategy.approved", calls_model = true },
    { function = "draft", topic = "plan.item_selected", calls_model = true },
    { function = "draft", topic = "review.revise", calls_model = true },
    { function = "review", topic = "draft.written", calls_model = true },
    { function = "policy", topic = "review.passed", calls_model = false },
    { function = "publish", topic = "draft.approved", calls_model = false },
    { function = "verify", topic = "post.published", calls_model = false },
    { function = "ingest", topic = "source.uploaded", calls_model = false },
  ]

  # Topics each function publishes to (the only topics it may publish on).
  publishes = {
    ingest     = ["source.ingested"]
    analyze    = ["analysis.completed"]
    strategize = ["strategy.proposed"]
    plan       = ["plan.item_selected"]
    draft      = ["draft.written"]
    review     = ["review.revise", "review.passed"]
    policy     = ["policy.passed"]
    publish    = ["post.published"]
    verify     = ["post.verified"]
    operator   = ["strategy.approved", "draft.approved", "source.ingested"]
    deadletter = []
    nova       = []
    dispatch   = ["draft.approved"]
  }

  # Functions whose runtime calls Vertex AI (the operator's job view asks Maya; Nova answers).
  model_callers = ["analyze", "strategize", "plan", "draft", "review", "operator", "nova"]

  # Functions that use the publishing connector (publish sends, verify reads back, dispatch
  # reads verified posts' engagement and the channels' public trends): the only ones given the
  # connector settings and its credentials (the webhook's signing secret, each channel
  # account's secret).
  connector_users = ["publish", "verify", "dispatch"]

  # Functions told where posts go (HARMONIA_PUBLISHING): policy and the operator's edits judge
  # drafts against it without any credential; the connector users check theirs agree.
  publishing_users = ["policy", "operator", "publish", "verify", "dispatch"]

  # Functions reached by people (authenticated) rather than by Pub/Sub push.
  public_functions = ["ingest", "operator", "nova"]

  # Functions invoked by Cloud Scheduler (main.tf, "dispatch"): neither pushed nor public.
  scheduled_functions = ["dispatch"]
}
