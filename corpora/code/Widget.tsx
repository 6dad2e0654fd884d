import React, { useState } from "react";

type Props = { title: string; items: string[] };

// A list with a filter box.
export function FilterList({ title, items }: Props): JSX.Element {
  const [query, setQuery] = useState("");
  const shown = items.filter((it) => it.toLowerCase().includes(query.toLowerCase()));
  return (
    <section className="filter-list">
      <h2>{title}</h2>
      <input value={query} onChange={(e) => setQuery(e.target.value)} placeholder="検索…" />
      <ul>
        {shown.map((it) => (
          <li key={it}>{it}</li>
        ))}
      </ul>
      <p>
        Showing {shown.length} of {items.length} items. Type in the box above to narrow the list down.
      </p>
    </section>
  );
}
