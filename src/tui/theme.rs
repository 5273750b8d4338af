//! Colours and text styles of the terminal UI, in one place.

use ratatui::style::{Color, Modifier, Style};

/// Every style the UI draws with.
#[derive(Debug, Clone)]
pub struct Theme {
    pub text: Style,
    pub dim: Style,
    pub user_label: Style,
    pub assistant_label: Style,
    pub user_text: Style,
    pub heading: Style,
    pub emphasis: Style,
    pub strong: Style,
    pub strike: Style,
    pub inline_code: Style,
    pub code_block: Style,
    pub code_border: Style,
    pub link: Style,
    pub quote: Style,
    pub list_marker: Style,
    pub rule: Style,
    pub reasoning: Style,
    pub tool: Style,
    pub tool_ok: Style,
    pub tool_err: Style,
    pub error: Style,
    pub warning: Style,
    pub notice: Style,
    pub status_bar: Style,
    pub status_key: Style,
    pub status_busy: Style,
    pub status_error: Style,
    pub overlay_border: Style,
    pub overlay_title: Style,
    pub selected: Style,
    /// Arena participants' labels, by seat.
    pub seats: [Style; 6],
    /// syntect theme name used for code blocks.
    pub code_theme: &'static str,
}

impl Default for Theme {
    fn default() -> Self {
        Theme {
            text: Style::default(),
            dim: Style::default().add_modifier(Modifier::DIM),
            user_label: Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            assistant_label: Style::default().fg(Color::Green).add_modifier(Modifier::BOLD),
            user_text: Style::default().fg(Color::Cyan),
            heading: Style::default().fg(Color::Magenta).add_modifier(Modifier::BOLD),
            emphasis: Style::default().add_modifier(Modifier::ITALIC),
            strong: Style::default().add_modifier(Modifier::BOLD),
            strike: Style::default().add_modifier(Modifier::CROSSED_OUT),
            inline_code: Style::default().fg(Color::Yellow),
            code_block: Style::default().fg(Color::Gray),
            code_border: Style::default().fg(Color::DarkGray),
            link: Style::default().fg(Color::Blue).add_modifier(Modifier::UNDERLINED),
            quote: Style::default().fg(Color::Gray).add_modifier(Modifier::ITALIC),
            list_marker: Style::default().fg(Color::Yellow),
            rule: Style::default().fg(Color::DarkGray),
            reasoning: Style::default().fg(Color::DarkGray).add_modifier(Modifier::ITALIC),
            tool: Style::default().fg(Color::Blue),
            tool_ok: Style::default().fg(Color::Green),
            tool_err: Style::default().fg(Color::Red),
            error: Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            warning: Style::default().fg(Color::Yellow),
            notice: Style::default().fg(Color::DarkGray),
            status_bar: Style::default().fg(Color::White).bg(Color::DarkGray),
            status_key: Style::default()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
            status_busy: Style::default()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
            status_error: Style::default()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(Modifier::BOLD),
            overlay_border: Style::default().fg(Color::Cyan),
            overlay_title: Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            selected: Style::default().fg(Color::Black).bg(Color::Cyan),
            seats: [
                Color::Green,
                Color::Magenta,
                Color::Yellow,
                Color::Blue,
                Color::Red,
                Color::Cyan,
            ]
            .map(|c| Style::default().fg(c).add_modifier(Modifier::BOLD)),
            code_theme: "base16-eighties.dark",
        }
    }
}
