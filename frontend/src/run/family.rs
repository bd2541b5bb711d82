//! Sub-workflow links on the run view: the child instance a `subworkflow` node started (with
//! its status) and, on a child's page, the parent that started it.

use crate::urls;
use trellis_model::api::{InstanceLink, NodeView, ParentRef};

/// A link to another instance: its text and address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub text: String,
    pub href: String,
}

/// The node's child instance, as "child <status>" linking to its page.
pub fn child_link(node: &NodeView) -> Option<Link> {
    let child = node.child.as_deref()?;
    let status = node.child_status.map(|s| s.to_string().replace('_', " "));
    let text = match status {
        Some(status) => format!("child instance · {status}"),
        None => "child instance".to_owned(),
    };
    Some(Link { text, href: urls::instance_page(child) })
}

/// Who started this instance: the parent's workflow (or its id, once purged) linking to the
/// parent's page, and the node.
pub fn started_by(parent: &ParentRef) -> (Link, String) {
    let text = match &parent.workflow_name {
        Some(name) => name.clone(),
        None => format!("instance {}", parent.instance),
    };
    (Link { text, href: urls::instance_page(&parent.instance) }, parent.node.clone())
}

/// A failure-handler link (either way): the other instance's workflow, or its id once the
/// workflow is gone, linking to its page.
pub fn instance_link(link: &InstanceLink) -> Link {
    let text = match &link.workflow_name {
        Some(name) => name.clone(),
        None => format!("instance {}", link.instance),
    };
    Link { text, href: urls::instance_page(&link.instance) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_model::{InstanceStatus, NodeStatus};

    fn node(child: Option<&str>, status: Option<InstanceStatus>) -> NodeView {
        NodeView {
            id: "sub".into(),
            status: NodeStatus::Waiting,
            attempts: 1,
            started_at: None,
            ended_at: None,
            output: None,
            error: None,
            child: child.map(str::to_owned),
            child_status: status,
            items: None,
            slow: false,
            slow_after_ms: None,
            slow_basis: None,
            approval: None,
        }
    }

    #[test]
    fn a_node_with_a_child_links_to_it_with_its_status() {
        let link = child_link(&node(Some("c1"), Some(InstanceStatus::TimedOut))).unwrap();
        assert_eq!(link, Link { text: "child instance · timed out".into(), href: "/instances/c1".into() });
        assert_eq!(child_link(&node(None, None)), None);
    }

    #[test]
    fn a_child_names_its_parents_workflow_or_its_id_once_purged() {
        let mut parent = ParentRef {
            instance: "p1".into(),
            node: "sub".into(),
            workflow_id: None,
            workflow_name: Some("Billing".into()),
        };
        let (link, node) = started_by(&parent);
        assert_eq!((link.text.as_str(), link.href.as_str(), node.as_str()), ("Billing", "/instances/p1", "sub"));
        parent.workflow_name = None;
        assert_eq!(started_by(&parent).0.text, "instance p1");
    }
}
