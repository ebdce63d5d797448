//! Reusable pieces of the interface, named after what people see.

pub mod app_bar;
pub mod approval_card;
pub mod artifact_card;
pub mod artifact_editor;
pub mod artifacts_panel;
pub mod counted_list;
pub mod day_chart;
pub mod diff_view;
pub mod form_note;
pub mod generate_menu;
pub mod message_bubble;
pub mod modal;
pub mod model_context;
pub mod model_picker;
pub mod new_password;
pub mod out_of_date;
pub mod popover;
pub mod requirements_panel;
pub mod search_box;
pub mod sidebar;
pub mod theme_toggle;
pub mod thread_item;
pub mod tools_menu;
pub mod trace_steps;
pub mod versions;
