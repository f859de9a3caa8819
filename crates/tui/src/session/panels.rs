//! What the session draws besides the transcript, the approval panel and the input: the
//! welcome of an empty session, command output, and `/plan`'s plan as lines.

use ratatui::layout::Rect;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

/// The plan of `/plan`, as lines.
pub(super) fn plan_lines(plan: &braincode_brain::RuntimePlan) -> Vec<String> {
    let mut lines = vec![format!(
        "plan ({}): primary {} — {}",
        plan.source.as_str(),
        plan.primary,
        plan.reason
    )];
    for worker in &plan.workers {
        lines.push(format!(
            "  {} {} — {}",
            worker.role,
            worker.phase.as_str(),
            worker.goal
        ));
    }
    for todo in &plan.todos {
        lines.push(format!("  ☐ {} ({})", todo.title, todo.role));
    }
    lines
}

/// What an empty session says: where it is and how to start.
pub(super) fn draw_welcome(frame: &mut ratatui::Frame<'_>, area: Rect, project: &std::path::Path) {
    if area.height < 3 {
        return;
    }
    let lines = vec![
        ratatui::text::Line::from(format!(" Braincode · {}", project.display())),
        ratatui::text::Line::from(
            " Type a request and press Enter. @ adds a file, /help lists the commands,",
        ),
        ratatui::text::Line::from(" Esc interrupts a running request, Ctrl-C twice quits."),
    ];
    let top = Rect::new(
        area.x,
        area.y + 1,
        area.width,
        area.height.saturating_sub(1).min(3),
    );
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), top);
}

/// Rows the info panel needs to show `lines` whole at `width` (borders included): long lines
/// wrap.
pub fn info_height(lines: &[String], width: u16) -> u16 {
    let text: Vec<ratatui::text::Line<'_>> = lines
        .iter()
        .map(|l| ratatui::text::Line::from(l.as_str()))
        .collect();
    let rows = Paragraph::new(text)
        .wrap(Wrap { trim: false })
        .line_count(width.saturating_sub(2));
    u16::try_from(rows).unwrap_or(u16::MAX).saturating_add(2)
}

/// Command output (`/help`, listings, notices) in a bordered panel that Esc closes.
pub fn draw_info(frame: &mut ratatui::Frame<'_>, area: Rect, lines: &[String]) {
    if area.height == 0 {
        return;
    }
    let text: Vec<ratatui::text::Line<'_>> = lines
        .iter()
        .map(|l| ratatui::text::Line::from(l.as_str()))
        .collect();
    let block = Block::default().borders(Borders::ALL).title(" Esc closes ");
    frame.render_widget(
        Paragraph::new(text).block(block).wrap(Wrap { trim: false }),
        area,
    );
}
