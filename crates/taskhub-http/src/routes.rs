//! Every route, as `(method, path)` in OpenAPI form. The generated OpenAPI document describes
//! exactly these (a test checks both ways, another that the server answers each and that each
//! answer fits its schema).

/// Every route the router serves.
pub const ROUTES: &[(&str, &str)] = &[
    (
        "POST",
        "/runtime/webhooks/durabletask/orchestrators/{functionName}",
    ),
    (
        "POST",
        "/runtime/webhooks/durabletask/orchestrators/{functionName}/{instanceId}",
    ),
    ("GET", "/runtime/webhooks/durabletask/instances"),
    ("DELETE", "/runtime/webhooks/durabletask/instances"),
    (
        "GET",
        "/runtime/webhooks/durabletask/instances/{instanceId}",
    ),
    (
        "DELETE",
        "/runtime/webhooks/durabletask/instances/{instanceId}",
    ),
    (
        "POST",
        "/runtime/webhooks/durabletask/instances/{instanceId}/raiseEvent/{eventName}",
    ),
    (
        "POST",
        "/runtime/webhooks/durabletask/instances/{instanceId}/terminate",
    ),
    (
        "POST",
        "/runtime/webhooks/durabletask/instances/{instanceId}/suspend",
    ),
    (
        "POST",
        "/runtime/webhooks/durabletask/instances/{instanceId}/resume",
    ),
    (
        "POST",
        "/runtime/webhooks/durabletask/instances/{instanceId}/restart",
    ),
    (
        "POST",
        "/runtime/webhooks/durabletask/instances/{instanceId}/rewind",
    ),
    ("GET", "/runtime/webhooks/durabletask/entities"),
    ("GET", "/runtime/webhooks/durabletask/entities/{entityName}"),
    (
        "GET",
        "/runtime/webhooks/durabletask/entities/{entityName}/{entityKey}",
    ),
    (
        "POST",
        "/runtime/webhooks/durabletask/entities/{entityName}/{entityKey}",
    ),
    ("GET", "/api/hub"),
    ("GET", "/api/stats"),
    ("GET", "/api/instances"),
    ("GET", "/api/instances/{instanceId}"),
    (
        "GET",
        "/api/instances/{instanceId}/executions/{executionId}",
    ),
    ("GET", "/api/entities"),
    ("POST", "/api/entities/clean"),
    ("GET", "/api/entities/{entityId}"),
    ("DELETE", "/api/entities/{entityId}"),
    ("POST", "/api/entities/{entityId}/signal"),
    ("GET", "/api/partitions"),
    ("POST", "/api/partitions/{partition}/bump"),
    ("POST", "/api/partitions/{partition}/offline"),
    ("POST", "/api/partitions/{partition}/online"),
    ("GET", "/api/workers"),
    ("POST", "/api/workers/{name}/prohibit"),
    ("POST", "/api/workers/{name}/allow"),
    ("GET", "/api/scale"),
    ("GET", "/api/dead-letters"),
    ("POST", "/api/dead-letters/{id}/replay"),
    ("GET", "/api/openapi.json"),
    ("GET", "/metrics"),
    ("GET", "/"),
    ("GET", "/app.js"),
    ("GET", "/style.css"),
    ("GET", "/favicon.svg"),
];
