// Tiny event bus and a todo store, plain ES2020.
'use strict';

const { EventEmitter } = require('events');

/**
 * A store that emits "change" whenever its items change.
 * @param {Array<object>} initial - the starting items
 */
class TodoStore extends EventEmitter {
  #items = [];

  constructor(initial = []) {
    super();
    this.#items = [...initial];
  }

  get items() {
    return this.#items.slice(); // a copy, never the array itself
  }

  add(title, { done = false, tags = [] } = {}) {
    const item = { id: TodoStore.nextId++, title, done, tags, createdAt: Date.now() };
    this.#items.push(item);
    this.emit('change', { type: 'add', item });
    return item;
  }

  toggle(id) {
    const item = this.#items.find((it) => it.id === id);
    if (!item) {
      throw new Error(`no todo with id ${id}`);
    }
    item.done = !item.done;
    this.emit('change', { type: 'toggle', item });
  }
}

TodoStore.nextId = 1;

const formatters = {
  plain: (item) => `${item.done ? '[x]' : '[ ]'} ${item.title}`,
  json: (item) => JSON.stringify(item),
  // 日本語のラベル
  ラベル: (item) => `${item.done ? '済' : '未'}：${item.title}`,
};

export function render(store, style = 'plain') {
  const fmt = formatters[style] ?? formatters.plain;
  return store.items.map(fmt).join('\n');
}

export default TodoStore;
