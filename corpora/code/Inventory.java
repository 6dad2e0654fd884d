package com.example.inventory;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * An inventory of items with quantities.
 * <p>Not thread-safe.</p>
 */
public class Inventory {
    private final List<Item> items = new ArrayList<>();

    /** One line of the inventory. */
    public static final class Item {
        private final String sku;
        private int quantity;

        public Item(String sku, int quantity) {
            this.sku = sku;
            this.quantity = quantity;
        }

        public String sku() { return sku; }

        public int quantity() { return quantity; }

        /** Nested deeper still: a reservation against an item. */
        public final class Reservation {
            private final int amount;

            Reservation(int amount) {
                if (amount > quantity) {
                    throw new IllegalArgumentException("not enough " + sku + ": " + quantity + " < " + amount);
                }
                this.amount = amount;
                quantity -= amount;
            }

            public int amount() { return amount; }
        }
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("Inventory[");
        for (Item item : items) {
            sb.append(item.sku()).append('=').append(item.quantity()).append(' ');
        }
        return sb.append(']').toString();
    }

    // ユーザー名で検索する
    public Optional<Item> find(String sku) {
        return items.stream().filter(i -> i.sku().equals(sku)).findFirst();
    }

    @Deprecated
    @SuppressWarnings("unused")
    public void add(String sku, int quantity) {
        find(sku).ifPresentOrElse(
            i -> i.quantity += quantity,
            () -> items.add(new Item(sku, quantity)));
    }

    public static void main(String[] args) {
        Inventory inv = new Inventory();
        inv.add("apple", 3);
        inv.add("pear", 5);
        System.out.println(inv);
    }
}
