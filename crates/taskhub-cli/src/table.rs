//! Hand-formatted text tables: a header row and left-aligned columns padded to the widest cell.

/// A table being built row by row.
#[derive(Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Self {
        Self {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are blank, extra cells are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, one line per row, each line ending in a newline.
    pub fn render(&self) -> String {
        let columns = self.headers.len();
        let cell = |row: &[String], i: usize| row.get(i).map_or("", String::as_str).to_owned();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, w) in widths.iter_mut().enumerate() {
                *w = (*w).max(cell(row, i).chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &[String]| {
            let mut text = String::new();
            for (i, width) in widths.iter().enumerate() {
                let c = cell(cells, i);
                text.push_str(&c);
                if i + 1 < columns {
                    let pad = width - c.chars().count() + 2;
                    text.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&self.headers);
        for row in &self.rows {
            line(row);
        }
        out
    }
}

/// `text` on one line, cut to at most `max` characters with an ellipsis.
pub fn short(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_columns_to_the_widest_cell() {
        let mut t = Table::new(&["ID", "STATUS"]);
        t.row(vec!["a-long-id".into(), "Completed".into()]);
        t.row(vec!["b".into()]);
        assert_eq!(t.render(), "ID         STATUS\na-long-id  Completed\nb\n");
    }

    #[test]
    fn shortens_with_an_ellipsis() {
        assert_eq!(short("abcdef", 4), "abc…");
        assert_eq!(short("a\nb", 10), "a b");
    }
}
